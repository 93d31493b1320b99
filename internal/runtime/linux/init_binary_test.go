package linux

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/initbin"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestInitSealed: the embedded sandbox init runs from a memfd sealed
// against every change (the CVE-2019-5736 class: a sandbox that reached
// its init's executable and rewrote it would own the next sandbox's
// start): a write through the runtime's own descriptor or a reopened one
// fails, the size is fixed, and the file still executes.
func TestInitSealed(t *testing.T) {
	if initbin.Program() == "" {
		testenv.Lacking(t, "no sandbox init is embedded: run go generate ./internal/initbin (the test runner does)")
	}
	f, source, err := openInit("")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !strings.Contains(source, "sealed memfd") {
		t.Errorf("init source %q", source)
	}
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if want := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE; err != nil || seals&want != want {
		t.Fatalf("seals %#x (%v), want %#x", seals, err, want)
	}
	path := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if _, err := f.WriteAt([]byte{0}, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("write through the runtime's descriptor: %v, want EPERM", err)
	}
	if w, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		_, err = w.WriteAt([]byte{0}, 0)
		w.Close()
		if !errors.Is(err, unix.EPERM) {
			t.Errorf("write through a reopened descriptor: %v, want EPERM", err)
		}
	}
	if err := f.Truncate(0); err == nil {
		t.Error("the sealed init could be truncated")
	}
	// What the memfd holds is the program, byte for byte (copied from the
	// executable file, not from memory).
	if b, err := os.ReadFile(path); err != nil || string(b) != initbin.Program() {
		t.Errorf("the memfd holds %d bytes (%v), not the %d of the program", len(b), err, len(initbin.Program()))
	}
	out, err := exec.Command(path).CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "not run by hand") {
		t.Errorf("executing the init by hand: exit %d, %q", code, out)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
