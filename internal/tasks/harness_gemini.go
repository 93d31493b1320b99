package tasks

// geminiHarness runs @google/gemini-cli@0.61.0. (Being written: its command line and parser
// are not done yet.)
var geminiHarness = Harness{
	Name:      "gemini",
	Template:  "harness-gemini",
	Package:   "@google/gemini-cli@0.61.0",
	Argv:      func(r Request) []string { return nil },
	NewParser: func() Parser { return &genericParser{} },
}
