// netprobe.js URL-HOST: GET https://HOST/ through the proxy's CONNECT
// (node does not read HTTPS_PROXY itself), trusting only what node trusts
// by default plus NODE_EXTRA_CA_CERTS.
const http = require("http");
const tls = require("tls");
const host = process.argv[2];
http.request({ host: "127.0.0.1", port: 3128, method: "CONNECT", path: host + ":443" })
  .on("connect", (res, socket) => {
    if (res.statusCode !== 200) { console.log("refused", res.statusCode); return; }
    const t = tls.connect({ socket, servername: host }, () => {
      t.write("GET / HTTP/1.0\r\nHost: " + host + "\r\n\r\n");
    });
    let body = "";
    t.on("data", (d) => { body += d; });
    t.on("end", () => { console.log(body.split("\r\n\r\n")[1].trim()); });
    t.on("error", (e) => { console.log("fail", e.code || e.message); });
  })
  .on("error", (e) => { console.log("fail", e.message); })
  .end();
