package e2b

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The envd messages in their proto3 JSON form (lowerCamelCase names, int64
// as strings, bytes as base64, enums by name), re-authored from E2B's
// public envd specification: process/process.proto and
// filesystem/filesystem.proto. Only the fields Airlock answers are here;
// a reader ignores the others.

// process.ProcessConfig
type processConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args,omitempty"`
	Envs map[string]string `json:"envs,omitempty"`
	Cwd  *string           `json:"cwd,omitempty"`
}

// process.PTY
type ptyConfig struct {
	Size *ptySize `json:"size,omitempty"`
}

type ptySize struct {
	Cols uint32 `json:"cols"`
	Rows uint32 `json:"rows"`
}

// process.ProcessSelector (oneof pid, tag)
type processSelector struct {
	Pid *uint32 `json:"pid,omitempty"`
	Tag *string `json:"tag,omitempty"`
}

// process.StartRequest
type startRequest struct {
	Process processConfig `json:"process"`
	Pty     *ptyConfig    `json:"pty,omitempty"`
	Tag     *string       `json:"tag,omitempty"`
	Stdin   *bool         `json:"stdin,omitempty"`
}

// process.ConnectRequest, process.CloseStdinRequest
type selectRequest struct {
	Process processSelector `json:"process"`
}

// process.UpdateRequest
type updateRequest struct {
	Process processSelector `json:"process"`
	Pty     *ptyConfig      `json:"pty,omitempty"`
}

// process.SendInputRequest
type sendInputRequest struct {
	Process processSelector `json:"process"`
	Input   processInput    `json:"input"`
}

// process.ProcessInput (oneof stdin, pty); bytes are base64 in JSON,
// which encoding/json does for []byte.
type processInput struct {
	Stdin []byte `json:"stdin,omitempty"`
	Pty   []byte `json:"pty,omitempty"`
}

// process.SendSignalRequest
type sendSignalRequest struct {
	Process processSelector `json:"process"`
	Signal  signal          `json:"signal"`
}

// signal is process.Signal: a JSON writer sends its name, but a number is
// valid proto3 JSON too.
type signal int32

const (
	sigUnspecified signal = 0
	sigKill        signal = 9
	sigTerm        signal = 15
)

var signalNames = map[string]signal{"SIGNAL_UNSPECIFIED": sigUnspecified, "SIGNAL_SIGKILL": sigKill, "SIGNAL_SIGTERM": sigTerm}

func (s *signal) UnmarshalJSON(b []byte) error {
	var name string
	if json.Unmarshal(b, &name) == nil {
		v, ok := signalNames[name]
		if !ok {
			return fmt.Errorf("unknown signal %q", name)
		}
		*s = v
		return nil
	}
	var n int32
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("signal: %w", err)
	}
	*s = signal(n)
	return nil
}

// process.StartResponse and process.ConnectResponse
type processResponse struct {
	Event processEvent `json:"event"`
}

// process.ProcessEvent (oneof start, data, end, keepalive)
type processEvent struct {
	Start     *startEvent `json:"start,omitempty"`
	Data      *dataEvent  `json:"data,omitempty"`
	End       *endEvent   `json:"end,omitempty"`
	Keepalive *struct{}   `json:"keepalive,omitempty"`
}

type startEvent struct {
	Pid uint32 `json:"pid"`
}

// dataEvent is a oneof: exactly one is set.
type dataEvent struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	Pty    []byte `json:"pty,omitempty"`
}

type endEvent struct {
	ExitCode int32   `json:"exitCode"`
	Exited   bool    `json:"exited"`
	Status   string  `json:"status"`
	Error    *string `json:"error,omitempty"`
}

// process.ListResponse
type listResponse struct {
	Processes []processInfo `json:"processes"`
}

type processInfo struct {
	Config processConfig `json:"config"`
	Pid    uint32        `json:"pid"`
	Tag    *string       `json:"tag,omitempty"`
}

// filesystem requests: Stat, MakeDir, Remove (path); ListDir (path, depth);
// Move (source, destination).
type pathRequest struct {
	Path  string `json:"path"`
	Depth uint32 `json:"depth,omitempty"`
}

type moveRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// filesystem.StatResponse, MakeDirResponse, MoveResponse
type entryResponse struct {
	Entry *entryInfo `json:"entry"`
}

// filesystem.ListDirResponse
type listDirResponse struct {
	Entries []entryInfo `json:"entries"`
}

// filesystem.EntryInfo
type entryInfo struct {
	Name         string `json:"name"`
	Type         string `json:"type"` // FileType by name
	Path         string `json:"path"`
	Size         int64  `json:"size,string"`
	Mode         uint32 `json:"mode"`
	Permissions  string `json:"permissions"`
	Owner        string `json:"owner"`
	Group        string `json:"group"`
	ModifiedTime string `json:"modifiedTime,omitempty"` // google.protobuf.Timestamp, RFC 3339
}

// filesystem.FileType names.
const (
	fileTypeUnspecified = "FILE_TYPE_UNSPECIFIED"
	fileTypeFile        = "FILE_TYPE_FILE"
	fileTypeDir         = "FILE_TYPE_DIRECTORY"
	fileTypeSymlink     = "FILE_TYPE_SYMLINK"
)

// modeBits turns Airlock's octal permission string ("0644") and type into
// a Go os.FileMode's bits and its ls-style string, as envd reports them.
func modeBits(typ, octal string) (uint32, string) {
	perm, err := strconv.ParseUint(octal, 8, 32)
	if err != nil {
		perm = 0
	}
	perm &= 0o777
	var mode uint32 = uint32(perm)
	lead := "-"
	switch typ {
	case "dir":
		mode |= 1 << 31 // os.ModeDir
		lead = "d"
	case "symlink":
		mode |= 1 << 27 // os.ModeSymlink
		lead = "L"
	}
	var b strings.Builder
	b.WriteString(lead)
	const rwx = "rwxrwxrwx"
	for i := 8; i >= 0; i-- {
		if perm&(1<<uint(i)) != 0 {
			b.WriteByte(rwx[8-i])
		} else {
			b.WriteByte('-')
		}
	}
	return mode, b.String()
}

// filesystem.WatchDirRequest and filesystem.CreateWatcherRequest
type watchRequest struct {
	Path               string `json:"path"`
	Recursive          bool   `json:"recursive,omitempty"`
	IncludeEntry       bool   `json:"includeEntry,omitempty"`
	AllowNetworkMounts bool   `json:"allowNetworkMounts,omitempty"`
}

// filesystem.FilesystemEvent
type fsEvent struct {
	Name  string     `json:"name"`
	Type  string     `json:"type"` // EventType by name
	Entry *entryInfo `json:"entry,omitempty"`
}

// filesystem.WatchDirResponse (oneof start, filesystem, keepalive)
type watchDirResponse struct {
	Start      *struct{} `json:"start,omitempty"`
	Filesystem *fsEvent  `json:"filesystem,omitempty"`
	Keepalive  *struct{} `json:"keepalive,omitempty"`
}

// filesystem.CreateWatcherResponse, GetWatcherEventsRequest and
// RemoveWatcherRequest
type watcherIDMessage struct {
	WatcherID string `json:"watcherId"`
}

// filesystem.GetWatcherEventsResponse
type watcherEventsResponse struct {
	Events []fsEvent `json:"events"`
}
