// Package askchan is how a sandbox asks a person: a unix socket in the
// abstract namespace of the sandbox's own network namespace (reachable
// only from inside that sandbox, with no address on any network), on which
// the daemon answers each question with an approval's decision; and the
// programs that ask through it from inside: airlock-approve, a command
// that blocks until a person decides; its MCP server, which Claude Code
// calls as its --permission-prompt-tool; and its hook mode, Codex's
// PreToolUse hook.
//
// The programs run in the sandbox, so the package is part of the sandbox
// init program (cmd/airlock-init is also airlock-approve): it imports the
// standard library's few packages the init has already, nothing else.
//
// What comes over the socket comes from the sandbox and is not trusted:
// the daemon bounds its size and the number asked at once, and decides
// nothing itself beyond what the task allowed in advance. An agent that
// does not ask loses nothing it had: the isolation boundary stays the
// sandbox and its egress policy; asking gates what a cooperating harness
// does with what it has.
package askchan

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Socket is the channel's address: an abstract unix socket, so it lives
// in the network namespace it was made in, the sandbox's.
const Socket = "@airlock-approvals"

// Kinds of question.
const (
	KindCommand = "command" // something the agent wants to do, in its words
	KindHarness = "harness" // a harness's tool call
)

// MaxAsk bounds one question's encoding; MaxInput a harness tool's input
// in it (a larger one is shown to the person cut short: Preview).
const (
	MaxAsk   = 128 << 10
	MaxInput = 60 << 10
)

// MaxAtOnce bounds the questions one sandbox has open at once; one more
// is answered with an error.
const MaxAtOnce = 16

// Ask is one question.
type Ask struct {
	Kind    string          `json:"kind"`
	Text    string          `json:"text,omitempty"`    // kind command
	Harness string          `json:"harness,omitempty"` // kind harness: which
	Tool    string          `json:"tool,omitempty"`    // kind harness: the harness's name for the tool
	Input   json.RawMessage `json:"input,omitempty"`   // kind harness: the call's arguments
}

// Answer is a decision, or why there is none (Error).
type Answer struct {
	Allow bool `json:"allow"`
	// ID is the approval that was decided; "" when the task's settings
	// answered without asking anyone.
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// dialAddr is where Request asks: Socket, but for tests in the host's
// own namespace.
var dialAddr = Socket

// ErrNoChannel: nothing listens on the socket; the sandbox was not made
// with approvals (only a task's sandbox is).
var ErrNoChannel = errors.New("this sandbox has no approvals channel (airlock-approve works in a task's sandbox)")

// Handler answers one question; ctx ends when the asker hangs up.
type Handler func(ctx context.Context, a Ask) Answer

// Serve answers questions on ln until it is closed, one a connection and
// at most MaxAtOnce at a time.
func Serve(ln net.Listener, h Handler) error {
	slots := make(chan struct{}, MaxAtOnce)
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		select {
		case slots <- struct{}{}:
			go func() {
				defer func() { <-slots }()
				serveOne(c, h)
			}()
		default:
			go refuse(c, fmt.Sprintf("%d questions are open already; ask again once one is decided", MaxAtOnce))
		}
	}
}

// ioWait bounds reading a question and writing an answer (not the wait
// for a decision, which the approval's deadline bounds).
const ioWait = 10 * time.Second

func serveOne(c net.Conn, h Handler) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(ioWait))
	br := bufio.NewReaderSize(c, 4096)
	var a Ask
	if err := readLine(br, &a, MaxAsk); err != nil {
		writeAnswer(c, Answer{Error: err.Error()})
		return
	}
	c.SetReadDeadline(time.Time{})
	// The asker only waits from here: whatever it sends or its hanging
	// up ends the question (an abandoned approval).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		br.ReadByte()
		cancel()
	}()
	writeAnswer(c, h(ctx, a))
}

func refuse(c net.Conn, why string) {
	defer c.Close()
	writeAnswer(c, Answer{Error: why})
}

func writeAnswer(c net.Conn, a Answer) {
	b, _ := marshal(a)
	c.SetWriteDeadline(time.Now().Add(ioWait))
	c.Write(append(b, '\n'))
}

// readLine decodes one newline-ended JSON value of at most max bytes.
func readLine(br *bufio.Reader, v any, max int) error {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > max {
			return fmt.Errorf("a message is at most %d bytes", max)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				break
			}
			return fmt.Errorf("read: %w", err)
		}
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return nil
}

// Redial is how long Request keeps asking again while the channel is
// down (the daemon restarting: its tasks go on under the next one);
// FirstDial how long it tries a channel it never reached before saying
// there is none.
var (
	Redial    = 2 * time.Minute
	FirstDial = 5 * time.Second
)

// Request asks a and waits for the decision. A channel that breaks
// before the answer is dialled again and the question asked anew (a new
// approval: the old one ends abandoned), for up to Redial.
func Request(a Ask) (Answer, error) {
	b, err := marshal(a)
	if err != nil {
		return Answer{}, err
	}
	if len(b) > MaxAsk {
		return Answer{}, fmt.Errorf("the question is %d bytes; at most %d", len(b), MaxAsk)
	}
	// broke is when the channel was last found down: first at the start.
	broke, reached := time.Now(), false
	var last error
	for try := 0; ; try++ {
		if try > 0 {
			if !reached && time.Since(broke) > FirstDial {
				return Answer{}, ErrNoChannel
			}
			if time.Since(broke) > Redial {
				return Answer{}, fmt.Errorf("the approvals channel broke and did not come back: %w", last)
			}
			time.Sleep(250 * time.Millisecond)
		}
		c, err := net.Dial("unix", dialAddr)
		if err != nil {
			last = err
			continue
		}
		reached = true
		ans, err := exchange(c, b)
		if err != nil {
			broke, last = time.Now(), err
			continue
		}
		if ans.Error != "" {
			return ans, errors.New(ans.Error)
		}
		return ans, nil
	}
}

func exchange(c net.Conn, q []byte) (Answer, error) {
	defer c.Close()
	if _, err := c.Write(append(q, '\n')); err != nil {
		return Answer{}, err
	}
	var ans Answer
	if err := readLine(bufio.NewReader(c), &ans, MaxAsk); err != nil {
		return Answer{}, err
	}
	return ans, nil
}

// marshal is json.Marshal without its HTML escaping: what is asked is
// shown to a person as the harness gave it ("echo a > b", not
// "echo a \u003e b").
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
