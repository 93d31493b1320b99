package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
)

// SessionCast returns the recording of a session's terminal as an
// asciicast v2 file (https://docs.asciinema.org/manual/asciicast/v2/),
// read from the sandbox's audit log: it works after the session and the
// sandbox have ended. The caller closes it.
func (c *Client) SessionCast(ctx context.Context, sandboxID, sessionID string) (io.ReadCloser, error) {
	return c.cast(ctx, sandboxID, "/sessions/"+url.PathEscape(sessionID)+"/cast", nil)
}

// AuditCast returns the recording of one command's output (execID), or
// with execID "" of everything the sandbox's commands and sessions
// printed, as an asciicast v2 file. The caller closes it.
func (c *Client) AuditCast(ctx context.Context, sandboxID, execID string) (io.ReadCloser, error) {
	var q url.Values
	if execID != "" {
		q = url.Values{"exec": {execID}}
	}
	return c.cast(ctx, sandboxID, "/audit/cast", q)
}

func (c *Client) cast(ctx context.Context, id, suffix string, q url.Values) (io.ReadCloser, error) {
	hdr := http.Header{"Accept": {"application/x-asciicast"}}
	resp, err := c.do(ctx, http.MethodGet, sandboxPath(id, suffix), q, nil, hdr)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
