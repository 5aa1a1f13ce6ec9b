"""otlp_sink.py: a minimal OTLP/HTTP profiles receiver for the tests. It saves every request body
(as sent, with its headers) under DIR and answers 200; the first request gets a partial success
(1 rejected profile, "sink test rejection") so that the sender's handling of it shows.

    python3 otlp_sink.py DIR      # writes DIR/port once listening on 127.0.0.1 (a free port)
"""
import http.server
import os
import sys

from otlp_schema import msg

out = sys.argv[1]
count = 0


class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        count += 1
        with open(os.path.join(out, "req-%d.bin" % count), "wb") as f:
            f.write(body)
        with open(os.path.join(out, "req-%d.hdr" % count), "w") as f:
            f.write("path: %s\n" % self.path)
            for k, v in self.headers.items():
                f.write("%s: %s\n" % (k.lower(), v))
        resp = msg("ExportProfilesServiceResponse")()
        if count == 1:
            resp.partial_success.rejected_profiles = 1
            resp.partial_success.error_message = "sink test rejection"
        data = resp.SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


srv = http.server.HTTPServer(("127.0.0.1", 0), Sink)
with open(os.path.join(out, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(out, "port.tmp"), os.path.join(out, "port"))
srv.serve_forever()
