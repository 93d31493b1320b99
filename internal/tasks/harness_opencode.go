package tasks

// opencodeHarness runs opencode-ai@1.18.33. (Being written: its command line and parser
// are not done yet.)
var opencodeHarness = Harness{
	Name:      "opencode",
	Template:  "harness-opencode",
	Package:   "opencode-ai@1.18.33",
	Argv:      func(r Request) []string { return nil },
	NewParser: func() Parser { return &genericParser{} },
}
