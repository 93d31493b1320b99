package tasks

// piHarness runs @mariozechner/pi-coding-agent@0.73.1. (Being written: its command line and parser
// are not done yet.)
var piHarness = Harness{
	Name:      "pi",
	Template:  "harness-pi",
	Package:   "@mariozechner/pi-coding-agent@0.73.1",
	Argv:      func(r Request) []string { return nil },
	NewParser: func() Parser { return &genericParser{} },
}
