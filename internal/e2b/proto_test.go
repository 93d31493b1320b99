package e2b

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// protoField is one field of a message in proto/*.proto.
type protoField struct {
	name, typ string
	number    int
	repeated  bool
}

// protoFile is what the checks need of a .proto: fields by message
// ("pkg.Outer.Inner"), enum values by enum ("pkg.Enum"), and the rpcs in
// descriptors.mjs's format.
type protoFile struct {
	messages map[string][]protoField
	enums    map[string]map[string]int
	rpcs     []string
}

var (
	protoBlock = regexp.MustCompile(`^(message|enum|oneof|service)\s+(\w+)\s*\{\s*(\})?$`)
	protoFld   = regexp.MustCompile(`^(optional\s+|repeated\s+)?(map<[^>]+>|[\w.]+)\s+(\w+)\s*=\s*(\d+);`)
	protoRPC   = regexp.MustCompile(`^rpc\s+(\w+)\((stream\s+)?(\w+)\)\s+returns\s+\((stream\s+)?(\w+)\);`)
	protoValue = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)\s*=\s*(-?\d+);`)
)

// parseProto reads the subset of proto3 the facade's files use: one
// declaration per line, blocks closed by a line of their own.
func parseProto(t *testing.T, name string) protoFile {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf := protoFile{messages: map[string][]protoField{}, enums: map[string]map[string]int{}}
	type scope struct{ kind, name string }
	var pkg string
	var stack []scope
	qualified := func() string {
		parts := []string{pkg}
		for _, s := range stack {
			if s.kind == "message" || s.kind == "enum" {
				parts = append(parts, s.name)
			}
		}
		return strings.Join(parts, ".")
	}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if p, ok := strings.CutPrefix(line, "package "); ok {
			pkg = strings.TrimSuffix(p, ";")
			continue
		}
		if m := protoBlock.FindStringSubmatch(line); m != nil {
			stack = append(stack, scope{m[1], m[2]})
			switch m[1] {
			case "message":
				pf.messages[qualified()] = []protoField{}
			case "enum":
				pf.enums[qualified()] = map[string]int{}
			}
			if m[3] != "" {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if line == "}" {
			if len(stack) == 0 {
				t.Fatalf("%s:%d: unbalanced }", name, n)
			}
			stack = stack[:len(stack)-1]
			continue
		}
		if len(stack) == 0 {
			continue
		}
		switch top := stack[len(stack)-1]; top.kind {
		case "message", "oneof":
			if m := protoFld.FindStringSubmatch(line); m != nil {
				num, _ := strconv.Atoi(m[4])
				q := qualified()
				pf.messages[q] = append(pf.messages[q], protoField{name: m[3], typ: m[2], number: num,
					repeated: strings.HasPrefix(m[1], "repeated")})
			}
		case "service":
			if m := protoRPC.FindStringSubmatch(line); m != nil {
				rpc := fmt.Sprintf("rpc %s.%s/%s %s %s", pkg, top.name, m[1], m[3], m[5])
				if m[2] != "" {
					rpc += " client-stream"
				}
				if m[4] != "" {
					rpc += " server-stream"
				}
				pf.rpcs = append(pf.rpcs, rpc)
			}
		case "enum":
			if m := protoValue.FindStringSubmatch(line); m != nil {
				v, _ := strconv.Atoi(m[2])
				pf.enums[qualified()][m[1]] = v
			}
		}
	}
	if len(stack) != 0 {
		t.Fatalf("%s: %d blocks left open", name, len(stack))
	}
	return pf
}

// jsonName is proto3's default JSON name of a field: lowerCamelCase.
func jsonName(field string) string {
	var b strings.Builder
	up := false
	for _, r := range field {
		if r == '_' {
			up = true
			continue
		}
		if up {
			r = []rune(strings.ToUpper(string(r)))[0]
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestMessagesMatchProto keeps messages.go and proto/*.proto from
// drifting: every JSON name a Go type reads or writes is a field of the
// message it stands for, 64-bit integers travel as strings, and every
// enum name the facade uses is a value of its enum, with its number.
func TestMessagesMatchProto(t *testing.T) {
	pf := parseProto(t, "proto/process.proto")
	fs := parseProto(t, "proto/filesystem.proto")
	for k, v := range fs.messages {
		pf.messages[k] = v
	}
	for k, v := range fs.enums {
		pf.enums[k] = v
	}
	for _, tc := range []struct {
		goType any
		msg    string
		omit   []string // fields of the Go type this message lacks
	}{
		{processConfig{}, "process.ProcessConfig", nil},
		{ptyConfig{}, "process.PTY", nil},
		{ptySize{}, "process.PTY.Size", nil},
		{processSelector{}, "process.ProcessSelector", nil},
		{startRequest{}, "process.StartRequest", nil},
		{selectRequest{}, "process.ConnectRequest", nil},
		{selectRequest{}, "process.CloseStdinRequest", nil},
		{updateRequest{}, "process.UpdateRequest", nil},
		{sendInputRequest{}, "process.SendInputRequest", nil},
		{processInput{}, "process.ProcessInput", nil},
		{sendSignalRequest{}, "process.SendSignalRequest", nil},
		{processResponse{}, "process.StartResponse", nil},
		{processResponse{}, "process.ConnectResponse", nil},
		{processEvent{}, "process.ProcessEvent", nil},
		{startEvent{}, "process.ProcessEvent.StartEvent", nil},
		{dataEvent{}, "process.ProcessEvent.DataEvent", nil},
		{endEvent{}, "process.ProcessEvent.EndEvent", nil},
		{listResponse{}, "process.ListResponse", nil},
		{processInfo{}, "process.ProcessInfo", nil},
		{pathRequest{}, "filesystem.ListDirRequest", nil},
		{pathRequest{}, "filesystem.StatRequest", []string{"depth"}},
		{pathRequest{}, "filesystem.MakeDirRequest", []string{"depth"}},
		{pathRequest{}, "filesystem.RemoveRequest", []string{"depth"}},
		{moveRequest{}, "filesystem.MoveRequest", nil},
		{entryResponse{}, "filesystem.StatResponse", nil},
		{entryResponse{}, "filesystem.MakeDirResponse", nil},
		{entryResponse{}, "filesystem.MoveResponse", nil},
		{listDirResponse{}, "filesystem.ListDirResponse", nil},
		{entryInfo{}, "filesystem.EntryInfo", nil},
		{watchRequest{}, "filesystem.WatchDirRequest", nil},
		{watchRequest{}, "filesystem.CreateWatcherRequest", nil},
		{fsEvent{}, "filesystem.FilesystemEvent", nil},
		{watchDirResponse{}, "filesystem.WatchDirResponse", nil},
		{watcherIDMessage{}, "filesystem.CreateWatcherResponse", nil},
		{watcherIDMessage{}, "filesystem.GetWatcherEventsRequest", nil},
		{watcherIDMessage{}, "filesystem.RemoveWatcherRequest", nil},
		{watcherEventsResponse{}, "filesystem.GetWatcherEventsResponse", nil},
	} {
		fields, ok := pf.messages[tc.msg]
		if !ok {
			t.Errorf("%s is not in proto/", tc.msg)
			continue
		}
		byJSON := map[string]protoField{}
		for _, f := range fields {
			byJSON[jsonName(f.name)] = f
		}
		rt := reflect.TypeOf(tc.goType)
		for i := range rt.NumField() {
			tag := rt.Field(i).Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "" || name == "-" {
				t.Errorf("%s.%s has no JSON name", rt.Name(), rt.Field(i).Name)
				continue
			}
			f, ok := byJSON[name]
			if !ok {
				for _, o := range tc.omit {
					ok = ok || o == name
				}
				if !ok {
					t.Errorf("%s (for %s) has JSON field %q; the message has no such field", rt.Name(), tc.msg, name)
				}
				continue
			}
			if strings.Contains(f.typ, "64") && !strings.Contains(opts, "string") {
				t.Errorf("%s.%s is %s %s: proto3 JSON sends it as a string; tag it ,string", rt.Name(), rt.Field(i).Name, f.typ, f.name)
			}
		}
	}
	enums := []struct {
		enum  string
		names map[string]int
	}{
		{"process.Signal", map[string]int{}},
		{"filesystem.FileType", map[string]int{fileTypeUnspecified: 0, fileTypeFile: 1, fileTypeDir: 2, fileTypeSymlink: 3}},
		{"filesystem.EventType", map[string]int{eventCreate: 1, eventWrite: 2, eventRemove: 3, eventRename: 4, eventChmod: 5}},
	}
	for name, v := range signalNames {
		enums[0].names[name] = int(v)
	}
	for _, e := range enums {
		values, ok := pf.enums[e.enum]
		if !ok {
			t.Errorf("enum %s is not in proto/", e.enum)
			continue
		}
		for name, num := range e.names {
			if got, ok := values[name]; !ok || got != num {
				t.Errorf("%s: the facade uses %s = %d; the .proto has %d (present: %v)", e.enum, name, num, got, ok)
			}
		}
	}
}

// TestParseProto checks the checker: it must see nested messages, oneof
// members and enum values, or TestMessagesMatchProto proves nothing.
func TestParseProto(t *testing.T) {
	pf := parseProto(t, "proto/process.proto")
	for msg, want := range map[string]string{
		"process.ProcessEvent":                 "start data end keepalive",
		"process.ProcessEvent.EndEvent":        "exit_code exited status error",
		"process.ProcessSelector":              "pid tag",
		"process.ProcessConfig":                "cmd args envs cwd",
		"process.StreamInputRequest.DataEvent": "input",
	} {
		var got []string
		for _, f := range pf.messages[msg] {
			got = append(got, f.name)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: fields %v, want %s", msg, got, want)
		}
	}
	if pf.enums["process.Signal"]["SIGNAL_SIGKILL"] != 9 {
		t.Errorf("process.Signal: %v", pf.enums["process.Signal"])
	}
	if jsonName("allow_network_mounts") != "allowNetworkMounts" {
		t.Error(jsonName("allow_network_mounts"))
	}
}
