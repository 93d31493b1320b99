package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

type netLogIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox's id"`
	After     int64  `json:"after,omitempty" jsonschema:"only events with a larger seq (the last seq of a previous call)"`
}

type netEvent struct {
	Seq      int64     `json:"seq"`
	Time     time.Time `json:"time"`
	Protocol string    `json:"protocol"`
	Host     string    `json:"host"`
	Port     int       `json:"port"`
	Decision string    `json:"decision" jsonschema:"allowed or denied"`
	Reason   string    `json:"reason,omitempty" jsonschema:"why it was denied"`
	Status   int       `json:"status,omitempty"`
}

type netLogOut struct {
	Events []netEvent `json:"events"`
	Note   string     `json:"note,omitempty"`
}

type auditIn struct {
	SandboxID string   `json:"sandbox_id" jsonschema:"the sandbox's id"`
	Types     []string `json:"types,omitempty" jsonschema:"only these event types (e.g. exec.started, exec.exited, file.written)"`
	After     int64    `json:"after,omitempty" jsonschema:"only events with a larger seq"`
}

type auditEvent struct {
	Seq   int64     `json:"seq"`
	Time  time.Time `json:"time"`
	Type  string    `json:"type"`
	Actor string    `json:"actor"`
	Data  any       `json:"data,omitempty"`
}

type auditOut struct {
	Events []auditEvent `json:"events"`
	Note   string       `json:"note,omitempty"`
}

// logLimit bounds one page of a log tool.
const logLimit = 200

func (b *bridge) addLogTools(s *mcpsdk.Server) {
	ro := &mcpsdk.ToolAnnotations{ReadOnlyHint: true}
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "network_log", Description: "The sandbox's outbound connections, allowed and denied, oldest first (200 per call; pass the last seq as after for more). " +
		"Use it to see why a download failed: a denied host must be added to the sandbox's allow list.", Annotations: ro}, b.networkLog)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "audit_log", Description: "The sandbox's audit log: commands run, files written, sessions, egress, lifecycle; oldest first, 200 per call (pass the last seq as after for more).",
		Annotations: ro}, b.auditLog)
}

func (b *bridge) networkLog(ctx context.Context, req *mcpsdk.CallToolRequest, in netLogIn) (*mcpsdk.CallToolResult, netLogOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, netLogOut{}, err
	}
	evs, err := c.NetworkLog(ctx, in.SandboxID, in.After, logLimit)
	if err != nil {
		return nil, netLogOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	out := netLogOut{Events: []netEvent{}}
	for _, e := range evs {
		out.Events = append(out.Events, netEvent{Seq: e.Seq, Time: e.Time, Protocol: e.Protocol, Host: e.Host, Port: e.Port, Decision: e.Decision, Reason: e.Reason, Status: e.Status})
	}
	if len(evs) == logLimit {
		out.Note = "more events may follow; call again with after set to the last seq"
	}
	return nil, out, nil
}

func (b *bridge) auditLog(ctx context.Context, req *mcpsdk.CallToolRequest, in auditIn) (*mcpsdk.CallToolResult, auditOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, auditOut{}, err
	}
	evs, err := c.AuditEvents(ctx, in.SandboxID, client.AuditQuery{Types: in.Types, After: in.After, Limit: logLimit})
	if err != nil {
		return nil, auditOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	out := auditOut{Events: []auditEvent{}}
	size := 0
	for i, e := range evs {
		// Output events can be large: a page stays within the output cap.
		if size += len(e.Data) + 100; size > outputCap && i > 0 {
			out.Note = fmt.Sprintf("more events follow (this page is cut at %d KiB); call again with after %d", outputCap>>10, out.Events[i-1].Seq)
			return nil, out, nil
		}
		ev := auditEvent{Seq: e.Seq, Time: e.Time, Type: e.Type, Actor: e.Actor}
		if len(e.Data) > 0 {
			if err := json.Unmarshal(e.Data, &ev.Data); err != nil {
				return nil, auditOut{}, fmt.Errorf("decode audit event %d: %v", e.Seq, err)
			}
		}
		out.Events = append(out.Events, ev)
	}
	if len(evs) == logLimit {
		out.Note = "more events may follow; call again with after set to the last seq"
	}
	return nil, out, nil
}
