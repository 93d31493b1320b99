package agent

import (
	"bytes"
	"encoding/hex"
	"os"
	goruntime "runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// markerVar is set in every exec's environment to a value unique to that
// exec. Children inherit it through fork, setsid and re-parenting, so a
// timeout can find a double-forked daemon that no parent link leads to. A
// process that scrubs its own environment escapes this search (not the
// sandbox: destroy kills everything); it is a net for runaway commands, not
// a security boundary.
const markerVar = "AIRLOCK_EXEC_ID"

func newMarker() string {
	return randomHex(12)
}

// randomHex is n bytes from the kernel's random pool, in hex: what
// crypto/rand would give, without the crypto packages' start-up in every
// sandbox init (the agent's only use of them).
func randomHex(n int) string {
	b := make([]byte, n)
	for got := 0; got < n; {
		k, err := unix.Getrandom(b[got:], 0)
		if err != nil && err != unix.EINTR {
			panic("getrandom: " + err.Error()) // as crypto/rand does: no names without randomness
		}
		got += max(k, 0)
	}
	return hex.EncodeToString(b)
}

// marked lists processes whose environment holds markerVar=marker. Reading
// another process's environ is a ptrace-mode check, so it runs on the fork
// thread (same landlock domain as the children) as the sandbox user.
func (s *server) marked(marker string) map[int]uint64 {
	want := []byte(markerVar + "=" + marker + "\x00")
	out := map[int]uint64{}
	s.cfg.Thread(func() {
		scan := func() {
			for pid, st := range scanProcs() {
				if pid == os.Getpid() || st.zombie {
					continue
				}
				b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
				if err != nil {
					continue
				}
				if bytes.HasPrefix(b, want) || bytes.Contains(b, append([]byte{0}, want...)) {
					out[pid] = st.start
				}
			}
		}
		if s.cfg.UID < 0 {
			scan()
			return
		}
		// fs ids are per thread: stay on this one while they are switched,
		// and never give it back if they cannot be restored.
		goruntime.LockOSThread()
		restore, err := becomeUser(s.cfg.UID, s.cfg.GID)
		if err != nil {
			if restore == nil || restore() == nil {
				goruntime.UnlockOSThread()
			}
			return
		}
		scan()
		if restore == nil || restore() == nil {
			goruntime.UnlockOSThread()
		}
	})
	return out
}
