package landlock

import "testing"

func TestHandledAccess(t *testing.T) {
	for _, tc := range []struct {
		abi  int
		want uint64
	}{
		{0, 0},
		{1, 0x1fff},
		{2, 0x3fff},
		{3, 0x7fff},
		{4, 0x7fff}, // ABI 4 added network rights only
		{5, 0xffff},
		{7, 0xffff},
		{9, 0xffff}, // rights this package does not know stay unhandled
	} {
		if got := handledAccess(tc.abi); got != tc.want {
			t.Errorf("handledAccess(%d) = %#x, want %#x", tc.abi, got, tc.want)
		}
	}
}

func TestRuleAccess(t *testing.T) {
	all := handledAccess(5)
	for _, tc := range []struct {
		name            string
		handled         uint64
		writable, isDir bool
		want            uint64
	}{
		{"read-only dir", all, false, true, accessReadFile | accessReadDir | accessExecute},
		{"read-only file", all, false, false, accessReadFile | accessExecute},
		{"read-write dir", all, true, true, all},
		{"read-write file", all, true, false, accessExecute | accessWriteFile | accessReadFile | accessTruncate | accessIoctlDev},
		{"read-write file, ABI 1", handledAccess(1), true, false, accessExecute | accessWriteFile | accessReadFile},
	} {
		if got := ruleAccess(tc.handled, tc.writable, tc.isDir); got != tc.want {
			t.Errorf("%s: ruleAccess = %#x, want %#x", tc.name, got, tc.want)
		}
	}
}
