#!/usr/bin/env python3
"""tests/remote/inject.py ROOT PORT_FILE - a web server that fails on purpose, for tests/remote/run.sh.

Not a real server: the failures nginx cannot be made to produce, by the first
part of the path; the rest names a file under ROOT, served with ranges.

  /ok/F          a plain 206 for each range (the control)
  /etag/F        a new ETag on every answer: the file "changes" between requests
  /grow/F        the length in Content-Range changes after the first answer
  /short/F       a body shorter than its Content-Length, then the connection closes
  /stall/F       the headers, then nothing (the client must time out)
  /flaky/F       503 for the first answer to each path, then as /ok
  /always500/F   500 every time
  /416/F         416 every time
  /401/F         401 every time
  /badrange/F    206 with a Content-Range that is not the range asked for
  /sign/F        302 to /signed/N/F, N new each time; /signed/N/F answers once, then 403
                 (a CDN's signed URL that expires, as the Hub's redirects lead to)
  /together/F    as /ok, but a .safetensors file's answer waits (at most 3 s) until another
                 is asked for at the same time; /together-max answers the most seen at once
                 (whether a client opens a sharded model's shards at once)

Binds 127.0.0.1 on a free port, writes it to PORT_FILE, serves until killed.
"""
import http.server
import os
import re
import sys
import threading
import time

root, port_file = sys.argv[1], sys.argv[2]
seen = set()  # paths answered
failed = set()  # /flaky/ paths that had their 503
signed = set()  # /signed/ paths answered once
counter = [0]
lock = threading.Lock()
together = {"now": 0, "most": 0}
arrived = threading.Condition(lock)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def plain(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        parts = self.path.split("/", 2)
        mode, name = parts[1], parts[2] if len(parts) > 2 else ""
        path = os.path.join(root, name)
        if mode == "sign":
            with lock:
                counter[0] += 1
                n = counter[0]
            self.send_response(302)
            self.send_header("Location", "/signed/%d/%s" % (n, name))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "signed":
            with lock:
                used = self.path in signed
                signed.add(self.path)
            if used:
                return self.plain(403)
            name = name.split("/", 1)[1]
            path = os.path.join(root, name)
        if mode == "together-max":
            body = str(together["most"]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if mode == "together" and name.endswith(".safetensors"):
            with arrived:
                together["now"] += 1
                together["most"] = max(together["most"], together["now"])
                arrived.notify_all()
                arrived.wait_for(lambda: together["now"] >= 2, timeout=3)
                together["now"] -= 1
        if mode in ("always500", "416", "401"):
            return self.plain({"always500": 500, "416": 416, "401": 401}[mode])
        if mode == "flaky":
            with lock:
                first = self.path not in failed
                failed.add(self.path)
            if first:
                return self.plain(503)
        if not os.path.isfile(path):
            return self.plain(404)
        data = open(path, "rb").read()
        size = len(data)
        m = re.match(r"bytes=(\d+)-(\d+)$", self.headers.get("Range", ""))
        first, last = (int(m.group(1)), min(int(m.group(2)), size - 1)) if m else (0, size - 1)
        body = data[first:last + 1]
        with lock:
            counter[0] += 1
            n = counter[0]
            again = self.path in seen  # this path was answered before
            seen.add(self.path)
        self.send_response(206 if m else 200)
        etag = '"v%d"' % n if mode == "etag" else '"v0"'
        self.send_header("ETag", etag)
        total = size + 1000 if mode == "grow" and again else size
        shown_first = first + 1 if mode == "badrange" else first
        if m:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (shown_first, last, total))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "stall":
            time.sleep(30)
            return
        if mode == "short":
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.replace(port_file + ".tmp", port_file)
server.serve_forever()
