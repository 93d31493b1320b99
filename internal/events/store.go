package events

import "github.com/airlockhq/airlock/internal/events/eventrec"

// Store is what the hub persists through (store.Store has it): its own
// records' store, nothing else.
type Store interface {
	eventrec.Store
}
