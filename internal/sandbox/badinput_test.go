package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/agent"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// badPaths are paths the kernel cannot take, each with a part of the
// message that must name what is wrong.
var badPaths = []struct{ name, path, msg string }{
	{"empty", "", "path is required"},
	{"NUL", "a\x00b", "NUL byte in path"},
	{"name over 255 bytes", "/tmp/" + strings.Repeat("n", 256), "is 256 bytes; a file name is at most 255"},
	{"relative name over 255 bytes", strings.Repeat("n", 256) + "/x", "a file name is at most 255"},
	{"path over 4095 bytes", "/" + strings.Repeat("d/", 2048) + "x", "is 4098 bytes; at most 4095"},
	// 4090 bytes as sent, 4100 under /home/user.
	{"relative path over 4095 bytes once resolved", strings.Repeat("d/", 2045), "is 4100 bytes; at most 4095"},
}

// TestFileOpsRefuseBadPaths: every file operation refuses a path the kernel
// would call too long (ENAMETOOLONG) or invalid as ErrInvalid naming the
// part at fault, before it reaches the runtime (whose stub would panic).
func TestFileOpsRefuseBadPaths(t *testing.T) {
	svc, st := stubService(t, newStub(), sandbox.Options{HostCPUs: 2})
	c := addTenant(t, st, "a", 0, 0)
	sb, err := svc.Create(context.Background(), c, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ops := map[string]func(p string) error{
		"read":  func(p string) error { _, err := svc.ReadFile(ctx, c, sb.ID, p, io.Discard); return err },
		"write": func(p string) error { _, err := svc.WriteFile(ctx, c, sb.ID, p, strings.NewReader("x"), 0); return err },
		"list":  func(p string) error { _, err := svc.ListDir(ctx, c, sb.ID, p); return err },
		"stat":  func(p string) error { _, err := svc.Stat(ctx, c, sb.ID, p); return err },
		"mkdir": func(p string) error { return svc.Mkdir(ctx, c, sb.ID, p, 0) },
		"remove": func(p string) error {
			return svc.Remove(ctx, c, sb.ID, p, true)
		},
		"move from": func(p string) error { return svc.Move(ctx, c, sb.ID, p, "/tmp/to") },
		"move to":   func(p string) error { return svc.Move(ctx, c, sb.ID, "/tmp/from", p) },
		"exec cwd": func(p string) error {
			_, err := svc.Exec(ctx, c, sb.ID, sandbox.ExecRequest{Cmd: []string{"pwd"}, Cwd: p})
			return err
		},
	}
	for op, call := range ops {
		for _, bp := range badPaths {
			msg := bp.msg
			if op == "exec cwd" {
				switch bp.name {
				case "empty":
					continue // "" is the default cwd, not a bad one
				case "NUL":
					msg = "NUL byte in cwd"
				}
			}
			t.Run(op+"/"+bp.name, func(t *testing.T) {
				err := call(bp.path)
				if !errors.Is(err, sandbox.ErrInvalid) || !strings.Contains(err.Error(), msg) {
					t.Fatalf("%v; want ErrInvalid with %q", err, msg)
				}
				if len(err.Error()) > 300 {
					t.Errorf("the message is %d bytes: it repeats the whole input", len(err.Error()))
				}
			})
		}
	}
}

// TestEnvNamesAreShellNames: create, exec and session env take shell names
// only, bounded, and the error names the variable.
func TestEnvNamesAreShellNames(t *testing.T) {
	svc, st := stubService(t, newStub(), sandbox.Options{HostCPUs: 2})
	c := addTenant(t, st, "a", 0, 0)
	sb, err := svc.Create(context.Background(), c, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		env  map[string]string
		msg  string
	}{
		{"empty name", map[string]string{"": "x"}, `environment variable "": a name is a shell name`},
		{"leading digit", map[string]string{"1A": "x"}, `environment variable "1A": a name is a shell name`},
		{"dash", map[string]string{"MY-VAR": "x"}, `"MY-VAR": a name is a shell name`},
		{"dot", map[string]string{"a.b": "x"}, `"a.b": a name is a shell name`},
		{"space", map[string]string{"A B": "x"}, `"A B": a name is a shell name`},
		{"equals", map[string]string{"A=B": "x"}, `"A=B": a name is a shell name`},
		{"NUL in name", map[string]string{"A\x00": "x"}, `"A\x00": a name is a shell name`},
		{"non-ASCII", map[string]string{"É": "x"}, `a name is a shell name`},
		{"name over 128 bytes", map[string]string{strings.Repeat("A", 129): "x"}, `1 to 128 bytes`},
		{"NUL in value", map[string]string{"OK": "x\x00y"}, `environment variable OK: the value holds a NUL byte`},
		{"value over the kernel's bound", map[string]string{"BIG": strings.Repeat("v", 128<<10)}, `environment variable BIG: NAME=value is 131076 bytes; at most 131071`},
	} {
		for where, call := range map[string]func() error{
			"create": func() error { _, err := svc.Create(ctx, c, sandbox.CreateRequest{Env: tc.env}); return err },
			"exec": func() error {
				_, err := svc.Exec(ctx, c, sb.ID, sandbox.ExecRequest{Cmd: []string{"env"}, Env: tc.env})
				return err
			},
			"session": func() error {
				_, err := svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{Env: tc.env})
				return err
			},
		} {
			t.Run(where+"/"+tc.name, func(t *testing.T) {
				if err := call(); !errors.Is(err, sandbox.ErrInvalid) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("%v; want ErrInvalid with %q", err, tc.msg)
				}
			})
		}
	}
	// What a shell accepts is accepted.
	if _, err := svc.Create(ctx, c, sandbox.CreateRequest{Env: map[string]string{"_": "", "a1": "x", "PATH_2": "=\n"}}); err != nil {
		t.Errorf("shell names refused: %v", err)
	}
}

// TestNULRefusedInCommands: a NUL in what reaches the sandbox's kernel
// (argv, a shell command, a session command) is refused, naming where.
func TestNULRefusedInCommands(t *testing.T) {
	svc, st := stubService(t, newStub(), sandbox.Options{HostCPUs: 2})
	c := addTenant(t, st, "a", 0, 0)
	sb, err := svc.Create(context.Background(), c, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
		msg  string
	}{
		{"argv", func() error {
			_, err := svc.Exec(ctx, c, sb.ID, sandbox.ExecRequest{Cmd: []string{"echo", "a\x00b"}})
			return err
		}, "NUL byte in cmd[1]"},
		{"command", func() error {
			_, err := svc.Exec(ctx, c, sb.ID, sandbox.ExecRequest{Command: "echo a\x00b"})
			return err
		}, "NUL byte in command"},
		{"session command", func() error {
			_, err := svc.SessionExec(ctx, c, sb.ID, "ses-0000000000000000", sandbox.SessionExecRequest{Command: "echo \x00"})
			return err
		}, "NUL byte in command"},
		{"template", func() error {
			_, err := svc.Create(ctx, c, sandbox.CreateRequest{Template: "base\x00"})
			return err
		}, `template "base\x00"`},
		{"workdir", func() error {
			_, err := svc.Create(ctx, c, sandbox.CreateRequest{Workdir: "/home\x00"})
			return err
		}, "workdir: NUL byte in path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, sandbox.ErrInvalid) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("%v; want ErrInvalid with %q", err, tc.msg)
			}
		})
	}
}

// TestFileErrorsAreTheCallers: a read refused as not a regular file is
// ErrInvalid (400) saying what is there, and a file that changed while it
// was read is ErrConflict (409) saying how: neither is an outage (503).
func TestFileErrorsAreTheCallers(t *testing.T) {
	rt := newStub()
	svc, st := stubService(t, rt, sandbox.Options{HostCPUs: 2})
	c := addTenant(t, st, "a", 0, 0)
	sb, err := svc.Create(context.Background(), c, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		err        error
		want       error
		msg        string
	}{
		{"kernel file", "/proc/self/status",
			&runtime.NotRegularError{Path: "/proc/self/status", What: "a file of the kernel's proc filesystem"}, sandbox.ErrInvalid,
			"invalid argument: /proc/self/status is a file of the kernel's proc filesystem, not a regular file: the file API reads regular files only"},
		{"FIFO", "/tmp/fifo", &runtime.NotRegularError{Path: "/tmp/fifo", What: "a FIFO (named pipe)"}, sandbox.ErrInvalid,
			"invalid argument: /tmp/fifo is a FIFO (named pipe), not a regular file"},
		{"changed", "/tmp/log",
			fmt.Errorf("agent read /tmp/log: %w", &agent.Error{Code: agent.CodeChanged, Message: "the file grew past its 10 bytes while it was read"}),
			sandbox.ErrConflict, "conflict: /tmp/log: the file grew past its 10 bytes while it was read; read it again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt.readErr = tc.err
			_, err := svc.ReadFile(context.Background(), c, sb.ID, tc.path, io.Discard)
			if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), tc.msg) {
				t.Fatalf("%v; want %v starting %q", err, tc.want, tc.msg)
			}
		})
	}
}

// TestPrintableMetadataAccepted: the printable rule refuses control and
// invisible characters, not letters of other scripts or punctuation.
func TestPrintableMetadataAccepted(t *testing.T) {
	svc, st := stubService(t, newStub(), sandbox.Options{HostCPUs: 2})
	c := addTenant(t, st, "a", 0, 0)
	md := map[string]string{"équipe": "données ☃", "app/role": "a b-c_d:e=f", "日本": "語", "k": ""}
	if _, err := svc.Create(context.Background(), c, sandbox.CreateRequest{Metadata: md}); err != nil {
		t.Fatalf("printable metadata refused: %v", err)
	}
}
