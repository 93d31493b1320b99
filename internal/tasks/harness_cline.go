package tasks

// clineHarness runs cline@3.0.65. (Being written: its command line and parser
// are not done yet.)
var clineHarness = Harness{
	Name:      "cline",
	Template:  "harness-cline",
	Package:   "cline@3.0.65",
	Argv:      func(r Request) []string { return nil },
	NewParser: func() Parser { return &genericParser{} },
}
