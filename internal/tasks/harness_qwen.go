package tasks

// qwenHarness runs @qwen-code/qwen-code@0.24.4. (Being written: its command line and parser
// are not done yet.)
var qwenHarness = Harness{
	Name:      "qwen",
	Template:  "harness-qwen",
	Package:   "@qwen-code/qwen-code@0.24.4",
	Argv:      func(r Request) []string { return nil },
	NewParser: func() Parser { return &genericParser{} },
}
