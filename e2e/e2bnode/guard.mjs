// Refuses every connection that is not to loopback, before the SDK loads:
// the E2B SDK defaults to e2b.app, and this test must never reach it (or
// any other host), whatever a missed variable would make it do.
import net from "node:net";

const loopback = new Set(["127.0.0.1", "::1", "localhost"]);
const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  const o = typeof args[0] === "object" && args[0] !== null ? (Array.isArray(args[0]) ? args[0][0] : args[0]) : { port: args[0], host: args[1] };
  const host = o?.host ?? "localhost";
  if (!o?.path && !loopback.has(host)) {
    throw new Error(`guard: refused a connection to ${host}:${o?.port}: this test talks to loopback only`);
  }
  return connect.apply(this, args);
};
