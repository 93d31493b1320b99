// Package fakenet is a fake internet for tests. It builds a network
// namespace reached from the host through a veth pair, holding public-looking
// test addresses, a DNS server and HTTP, HTTPS and echo servers, with host
// routes for every address tests name, so that test traffic can never leave
// the machine even while the code under test is wrong.
//
// It owns only what one Start (or New) creates: the namespace, the veth
// pair, the three host routes and the servers, all removed when the test
// ends (or at Close). It must
// never take over a prefix the host already routes somewhere specific, and
// never send a packet anywhere but into its own namespace.
//
// Only one Net exists on a host at a time (the routes are host-wide): Start
// waits for an earlier one, in this or another test process, to be cleaned
// up. A test must therefore not call Start twice.
//
// The package is Linux-only and meant to be imported by _linux_test.go files
// and by airlock bench, which builds one with New for its model mock.
package fakenet
