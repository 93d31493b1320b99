package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

type writeIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox's id"`
	Path      string `json:"path" jsonschema:"absolute, or relative to /home/user; missing parent directories are created"`
	Content   string `json:"content" jsonschema:"the file's new contents (replaces the file)"`
	Base64    bool   `json:"base64,omitempty" jsonschema:"content is base64 (for binary files)"`
}

type writeOut struct {
	Path string `json:"path"`
	Size int64  `json:"size" jsonschema:"bytes written"`
}

type pathIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox's id"`
	Path      string `json:"path" jsonschema:"absolute, or relative to /home/user"`
}

type readOut struct {
	Content string `json:"content" jsonschema:"the file's contents; base64 if the base64 field is true"`
	Base64  bool   `json:"base64" jsonschema:"true when the file is not UTF-8 text and content is base64"`
	Size    int64  `json:"size" jsonschema:"the file's full size in bytes"`
	Note    string `json:"note,omitempty"`
}

type fileEntry struct {
	Name  string    `json:"name"`
	Path  string    `json:"path"`
	Type  string    `json:"type" jsonschema:"file, dir, symlink or other"`
	Size  int64     `json:"size"`
	Mode  string    `json:"mode" jsonschema:"octal permissions"`
	MTime time.Time `json:"mtime"`
}

type listFilesIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox's id"`
	Path      string `json:"path,omitempty" jsonschema:"directory, absolute or relative to /home/user (default /home/user)"`
}

type listFilesOut struct {
	Entries []fileEntry `json:"entries"`
}

type deleteIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox's id"`
	Path      string `json:"path" jsonschema:"absolute, or relative to /home/user"`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"delete a directory and everything in it"`
}

type deleteOut struct {
	Deleted bool `json:"deleted"`
}

// readCap bounds what read_file returns; bigger files are read in parts
// with run_command (head, tail, sed -n).
const readCap = 1 << 20

func (b *bridge) addFileTools(s *mcpsdk.Server) {
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "write_file", Description: "Create or replace a file in a sandbox. Set base64 for binary content."}, b.writeFile)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "read_file", Description: "Read a file from a sandbox. Text comes back as is; anything that is not UTF-8 comes back base64 with base64: true. " +
		"Files over 1 MiB are cut; read parts of them with run_command (head, tail, sed -n).", Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true}}, b.readFile)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "list_files", Description: "List a directory in a sandbox: names, types, sizes, permissions and times.",
		Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true}}, b.listFiles)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "delete_file", Description: "Delete a file or an empty directory in a sandbox (recursive: a directory and its contents)."}, b.deleteFile)
}

func (b *bridge) writeFile(ctx context.Context, req *mcpsdk.CallToolRequest, in writeIn) (*mcpsdk.CallToolResult, writeOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, writeOut{}, err
	}
	data := []byte(in.Content)
	if in.Base64 {
		if data, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return nil, writeOut{}, fmt.Errorf("content is not valid base64 (%v); send standard base64 with padding, or plain text with base64 false", err)
		}
	}
	n, err := c.WriteFile(ctx, in.SandboxID, in.Path, bytes.NewReader(data), 0)
	if err != nil {
		return nil, writeOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	return nil, writeOut{Path: in.Path, Size: n}, nil
}

func (b *bridge) readFile(ctx context.Context, req *mcpsdk.CallToolRequest, in pathIn) (*mcpsdk.CallToolResult, readOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, readOut{}, err
	}
	data, size, err := readHead(ctx, c, in.SandboxID, in.Path, readCap)
	if err != nil {
		return nil, readOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	out := readOut{Size: size}
	if isText(data, size > int64(len(data))) {
		out.Content = string(data)
	} else {
		out.Content, out.Base64 = base64.StdEncoding.EncodeToString(data), true
	}
	if size > int64(len(data)) {
		out.Note = fmt.Sprintf("only the first %d of %d bytes are shown; read the rest with run_command (e.g. tail -c +%d %s | head -c %d)",
			len(data), size, len(data)+1, in.Path, readCap)
	}
	return nil, out, nil
}

// readHead reads up to limit bytes of a file and counts the rest.
func readHead(ctx context.Context, c *client.Client, id, path string, limit int) ([]byte, int64, error) {
	var buf bytes.Buffer
	n, err := c.ReadFile(ctx, id, path, writerFunc(func(p []byte) (int, error) {
		if room := limit - buf.Len(); room > 0 {
			buf.Write(p[:min(room, len(p))])
		}
		return len(p), nil
	}))
	return buf.Bytes(), n, err
}

// isText reports whether data is UTF-8 text without NULs; a cut file may
// end inside a character.
func isText(data []byte, cut bool) bool {
	if bytes.IndexByte(data, 0) >= 0 {
		return false
	}
	if cut {
		for i := 0; i < utf8.UTFMax && len(data) > 0 && !utf8.Valid(data); i++ {
			data = data[:len(data)-1]
		}
	}
	return utf8.Valid(data)
}

func (b *bridge) listFiles(ctx context.Context, req *mcpsdk.CallToolRequest, in listFilesIn) (*mcpsdk.CallToolResult, listFilesOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, listFilesOut{}, err
	}
	p := in.Path
	if strings.TrimSpace(p) == "" {
		p = "/home/user"
	}
	es, err := c.ListDir(ctx, in.SandboxID, p)
	if err != nil {
		return nil, listFilesOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	out := listFilesOut{Entries: []fileEntry{}}
	for _, e := range es {
		out.Entries = append(out.Entries, fileEntry{Name: e.Name, Path: e.Path, Type: e.Type, Size: e.Size, Mode: e.Mode, MTime: e.MTime})
	}
	return nil, out, nil
}

func (b *bridge) deleteFile(ctx context.Context, req *mcpsdk.CallToolRequest, in deleteIn) (*mcpsdk.CallToolResult, deleteOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, deleteOut{}, err
	}
	if err := c.Remove(ctx, in.SandboxID, in.Path, in.Recursive); err != nil {
		return nil, deleteOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	return nil, deleteOut{Deleted: true}, nil
}
