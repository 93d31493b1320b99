package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Each sandbox gets a uid/gid range of its own, so that uid 1000 in one
// sandbox is a different host user from uid 1000 in any other: a process that
// escaped its mount namespace still could not touch a neighbour's files or
// signal its processes. Ranges sit far above the ids distributions hand out
// (and above the usual /etc/subuid ranges).
const (
	uidBase  = 1 << 30
	uidCount = 65536
	maxSlots = 16384
)

// slot is a claimed uid range. Slots are claimed with an exclusive mkdir in
// the state directory, so two daemons (or a restarted one) never hand out the
// same range, and the claim survives restarts until the sandbox is destroyed.
type slot struct {
	n   int
	dir string
}

func (s slot) hostUID() int      { return uidBase + s.n*uidCount }
func (s slot) projectID() uint32 { return uint32(s.n + 1) }

func claimSlot(stateDir, id string) (slot, error) {
	root := filepath.Join(stateDir, "slots")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return slot{}, fmt.Errorf("create slots dir: %w", err)
	}
	for n := range maxSlots {
		dir := filepath.Join(root, strconv.Itoa(n))
		err := os.Mkdir(dir, 0o700)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return slot{}, fmt.Errorf("claim uid range: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(id), 0o600); err != nil {
			os.RemoveAll(dir)
			return slot{}, fmt.Errorf("claim uid range: %w", err)
		}
		return slot{n: n, dir: dir}, nil
	}
	return slot{}, errors.New("no free uid range: too many sandboxes")
}

// slotOwnedBy returns the slot claimed for the sandbox named name, -1 if
// none is.
func slotOwnedBy(stateDir, name string) int {
	root := filepath.Join(stateDir, "slots")
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(root, e.Name(), "owner")); err == nil && string(b) == name {
			return n
		}
	}
	return -1
}

func (s slot) release() error {
	if s.dir == "" {
		return nil
	}
	return os.RemoveAll(s.dir)
}
