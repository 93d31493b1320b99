package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/airlockhq/airlock/client"
)

// explain turns an error of a call to the server into what a person can
// act on: no server listening, no key, a key refused. Anything else is
// the server's own message, which says what and why.
func explain(err error) error {
	var ue *url.Error
	toServer := errors.As(err, &ue) && strings.HasPrefix(ue.URL, strings.TrimRight(serverURL(), "/"))
	switch {
	case toServer && errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("no Airlock server at %s (start one with `airlock serve`)", serverURL())
	case toServer && isDial(ue.Err):
		return fmt.Errorf("no Airlock server at %s (%v)", serverURL(), ue.Err)
	case errors.Is(err, client.ErrUnauthenticated) && keyFrom == "":
		return errors.New(noKeyMessage())
	case errors.Is(err, client.ErrUnauthenticated):
		return fmt.Errorf("the server at %s refused the API key from %s: %v", serverURL(), keyFrom, err)
	}
	return err
}

// isDial reports whether err is a failure to connect (a name that does
// not resolve, a host that cannot be reached), not one in a conversation.
func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// noKeyMessage says where the CLI looked for a key and how to give one.
func noKeyMessage() string {
	msg := "no API key: set AIRLOCK_API_KEY or run as root next to the server's data dir"
	p := filepath.Join(defaultDataDir(), "admin.key")
	switch _, err := os.ReadFile(p); {
	case errors.Is(err, os.ErrNotExist):
		return msg + fmt.Sprintf(" (there is no %s; set AIRLOCK_DATA_DIR to the server's --data-dir if it is elsewhere)", p)
	case err != nil:
		return msg + fmt.Sprintf(" (%v)", err)
	}
	return msg + fmt.Sprintf(" (%s is empty)", p)
}

// sandboxErr explains a failed call on sandbox id: if the sandbox has
// ended, when and how ("sandbox sb-1 has ended (stopped 3m ago)"),
// instead of the server's bare conflict.
func sandboxErr(ctx context.Context, c *client.Client, id string, err error) error {
	if err == nil || ctx.Err() != nil || !(errors.Is(err, client.ErrConflict) || errors.Is(err, client.ErrNotFound)) {
		return err
	}
	var ended *client.EndedError
	if errors.As(c.SandboxEnded(ctx, id), &ended) {
		return ended
	}
	return err
}
