package sandbox

import (
	"context"
	"net"
	"slices"
	"strconv"
)

// RememberTarget puts host:port on a running sandbox's allow list (allow)
// or deny list, as a person's decision on an approval asks to remember:
// the sandbox's later connections there are carried, or refused, without
// asking again. The policy is replaced and saved as SetNetwork does it.
// A concurrent SetNetwork may win over it (the last write stays).
func (s *Service) RememberTarget(ctx context.Context, c Caller, id, host string, port int, allow bool) error {
	pol, err := s.GetNetwork(ctx, c, id)
	if err != nil {
		return err
	}
	entry := net.JoinHostPort(host, strconv.Itoa(port))
	list := &pol.Deny
	if allow {
		list = &pol.Allow
	}
	if slices.Contains(*list, entry) {
		return nil
	}
	*list = append(slices.Clone(*list), entry)
	_, err = s.SetNetwork(ctx, c, id, pol)
	return err
}
