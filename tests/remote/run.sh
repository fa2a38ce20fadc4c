#!/bin/sh
# tests/remote/run.sh - tinspect reads files over HTTP from a real web server.
#
# usage: sh tests/remote/run.sh ./tinspect
#
# Starts Debian's nginx (no root needed: -p into a temporary prefix, daemon
# off, in the background, on two free localhost ports), serving files that
# tests/remote/gen.py and 'tinspect convert' write into that prefix, and
# stops it at the end. Skipped, with a message, when nginx is missing.
#
# Port A serves:
#   /files/      the files, with ranges (nginx's default)
#   /norange/    the same files, ranges off (max_ranges 0: a 200 with the whole body)
#   /forbidden/  403;   /missing/  404 (return 404)
#   /moved/X     302 to /files/X;   /loop/X  302 to itself
#   /ORG/REPO/resolve/main/X   302 to port B's /files/X, as the Hub sends to its CDN
# Port B serves /files/ alone. Both log each request's Authorization header,
# so the test sees where a token went. Port C serves /files/ over https with a
# self-signed certificate made by openssl (those cases are skipped without it).
# tests/remote/inject.py, a small Python server, makes the failures nginx
# cannot (a changing ETag, a short body, a stall, 5xx, a wrong Content-Range).
set -u
bin=${1:-./tinspect}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}

nginx=$(command -v nginx 2>/dev/null || true)
[ -z "$nginx" ] && [ -x /usr/sbin/nginx ] && nginx=/usr/sbin/nginx
if [ -z "$nginx" ]; then
	echo "remote tests: SKIPPED: nginx is not installed (Debian: apt-get install nginx)"
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-remote.XXXXXX")
pid=
ipid=
cleanup() {
	for p in $pid $ipid; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
# the remote-read cache in the temporary folder, never the user's; no .netrc or offline setting of the user's
XDG_CACHE_HOME=$tmp/cache
NETRC=$tmp/no-netrc
export XDG_CACHE_HOME NETRC
unset TINSPECT_OFFLINE HF_HUB_OFFLINE TINSPECT_CACHE_MAX

root=$tmp/root
mkdir -p "$root" "$tmp/logs" "$tmp/temp"
"$py" "$here/gen.py" "$root" || { echo "FAIL remote: gen.py"; exit 1; }
"$bin" convert "$root/big.safetensors" -o "$root/big.pt" >/dev/null || { echo "FAIL remote: convert to .pt"; exit 1; }
"$bin" convert "$root/many.safetensors" -o "$root/many.pt" >/dev/null || { echo "FAIL remote: convert to many.pt"; exit 1; }
"$bin" convert "$root/big.safetensors" --select layers.1.weight -o "$root/big.npy" >/dev/null ||
	{ echo "FAIL remote: convert to .npy"; exit 1; }

free_port() {
	"$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
pa=$(free_port)
pb=$(free_port)
while [ "$pb" = "$pa" ]; do pb=$(free_port); done
pc=$(free_port)
while [ "$pc" = "$pa" ] || [ "$pc" = "$pb" ]; do pc=$(free_port); done
# port C: https with a self-signed certificate, when openssl can make one
tls=
if command -v openssl >/dev/null 2>&1 &&
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1; then
	tls="server { listen 127.0.0.1:$pc ssl; ssl_certificate $tmp/cert.pem; ssl_certificate_key $tmp/key.pem; access_log off; location /files/ { alias $root/; } }"
fi

cat >"$tmp/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/logs/error.log;
events { worker_connections 64; }
http {
	default_type application/octet-stream;
	client_body_temp_path $tmp/temp/body;
	proxy_temp_path $tmp/temp/proxy;
	fastcgi_temp_path $tmp/temp/fastcgi;
	uwsgi_temp_path $tmp/temp/uwsgi;
	scgi_temp_path $tmp/temp/scgi;
	log_format auth '\$request_method \$uri range=\$http_range auth=\$http_authorization status=\$status';
	server {
		listen 127.0.0.1:$pa;
		access_log $tmp/logs/a.log auth;
		location /files/ { alias $root/; }
		location /norange/ { alias $root/; max_ranges 0; }
		location /forbidden/ { return 403; }
		location /missing/ { return 404; }
		location /moved/ { rewrite ^/moved/(.*)\$ /files/\$1 redirect; }
		location /loop/ { rewrite ^/loop/(.*)\$ /loop/\$1 redirect; }
		location /org/repo/resolve/main/ { rewrite ^/org/repo/resolve/main/(.*)\$ http://127.0.0.1:$pb/files/\$1 redirect; }
		location /org/sharded/resolve/main/ { rewrite ^/org/sharded/resolve/main/(.*)\$ http://127.0.0.1:$pb/files/sharded/\$1 redirect; }
		location /org/empty/resolve/main/ { return 404; }
		location /org/repo/resolve/v1/ { rewrite ^/org/repo/resolve/v1/(.*)\$ /files/\$1 redirect; }
	}
	server {
		listen 127.0.0.1:$pb;
		access_log $tmp/logs/b.log auth;
		location /files/ { alias $root/; }
	}
	$tls
}
EOF
"$nginx" -p "$tmp" -c "$tmp/nginx.conf" -e "$tmp/logs/error.log" &
pid=$!
up=0
for _ in $(seq 1 50); do
	if "$py" -c "import socket,sys; socket.create_connection(('127.0.0.1', $pa), 1); socket.create_connection(('127.0.0.1', $pb), 1)" 2>/dev/null; then
		up=1
		break
	fi
	sleep 0.1
done
if [ $up = 0 ]; then
	echo "FAIL remote: nginx did not start:"
	cat "$tmp/logs/error.log"
	exit 1
fi

# the failures nginx cannot make: tests/remote/inject.py, a small Python server that fails on purpose
"$py" "$here/inject.py" "$root" "$tmp/inject.port" &
ipid=$!
for _ in $(seq 1 50); do
	[ -s "$tmp/inject.port" ] && break
	sleep 0.1
done
[ -s "$tmp/inject.port" ] || { echo "FAIL remote: inject.py did not start"; exit 1; }
I=http://127.0.0.1:$(cat "$tmp/inject.port")

A=http://127.0.0.1:$pa
failed=0
pass=0
fail() {
	echo "FAIL remote: $*"
	failed=1
}
ok() { pass=$((pass + 1)); }

# The fields of inspect --json's "fetched": requests and bytes.
fetched() { "$py" -c 'import json,sys; d=json.load(sys.stdin); f=d.get("fetched",{}); print(f.get("requests",0), f.get("bytes",0))'; }

# inspect over http equals inspect of the local file, apart from the file's name and the fetched line;
# the requests and bytes it took stay within bounds.
same_as_local() { # NAME MAX_REQUESTS MAX_BYTES [SIZE: of the files it names, when not NAME's own]
	name=$1 size=${4:-$(wc -c <"$root/$1")}
	"$bin" inspect "$root/$name" >"$tmp/local.out" 2>&1 || { fail "$name: local inspect failed"; return; }
	if ! "$bin" inspect "$A/files/$name" >"$tmp/remote.out" 2>&1; then
		fail "$name: inspect over http failed: $(cat "$tmp/remote.out")"
		return
	fi
	grep -v '^  fetched ' "$tmp/remote.out" | sed "s#$A/files/#$root/#g" >"$tmp/remote.cmp"
	if ! cmp -s "$tmp/local.out" "$tmp/remote.cmp"; then
		fail "$name: inspect over http differs from the local file's:"
		diff "$tmp/local.out" "$tmp/remote.cmp" | head -20
		return
	fi
	grep -q '^  fetched        .* in [0-9]* HTTP requests\?$' "$tmp/remote.out" ||
		{ fail "$name: no 'fetched' line in the summary"; return; }
	"$bin" inspect "$root/$name" --json >"$tmp/local.json" || { fail "$name: local --json failed"; return; }
	"$bin" inspect "$A/files/$name" --json --no-cache >"$tmp/remote.json" || { fail "$name: --json over http failed"; return; }
	set -- $(fetched <"$tmp/remote.json") "$2" "$3"
	requests=$1 bytes=$2 max_requests=$3 max_bytes=$4
	if [ "$requests" -lt 1 ] || [ "$requests" -gt "$max_requests" ] || [ "$bytes" -gt "$max_bytes" ] ||
		[ "$bytes" -ge "$size" ]; then
		fail "$name: $requests requests and $bytes bytes for a file of $size (at most $max_requests and $max_bytes)"
		return
	fi
	"$py" - "$tmp/local.json" "$tmp/remote.json" "$A/files/" "$root/" <<'PY' || { fail "$name: --json differs"; return; }
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
b.pop("fetched")
fix = lambda s: s.replace(sys.argv[3], sys.argv[4]) if isinstance(s, str) else s
b["file"] = fix(b["file"])
b["files"] = [fix(f) for f in b.get("files", [])]
sys.exit(0 if a == b else 1)
PY
	echo "remote: $name: $requests requests, $bytes of $size bytes"
	ok
}

# --device cpu reads every tensor's bytes over HTTP: the same statistics as from the local file
"$bin" inspect "$root/big.pt" --device cpu >"$tmp/local.out" 2>&1
if "$bin" inspect "$A/files/big.pt" --device cpu >"$tmp/remote.out" 2>&1 &&
	grep -v '^  fetched ' "$tmp/remote.out" | sed "s#$A/files/#$root/#g" | cmp -s - "$tmp/local.out"; then ok; else
	fail "big.pt --device cpu over http differs from the local file's"; fi

same_as_local big.safetensors 2 300000
same_as_local big.pt 5 400000
same_as_local big.gguf 3 300000
same_as_local big.npy 2 200000
# 20,000 tensors: a header of 1.6 MB read in one more request; a torch zip's directory and data.pkl in one each
same_as_local many.safetensors 2 2200000
same_as_local many.pt 4 4000000
same_as_local sharded/model.safetensors.index.json 3 400000 $(cat "$root"/sharded/* | wc -c)

# A request for each error the server gives: one line naming the URL and the cause, exit 6.
expect_error() { # URL PATTERN [ENV...]
	url=$1 pattern=$2
	shift 2
	env "$@" "$bin" inspect "$url" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc != 6 ] || [ "$(wc -l <"$tmp/err")" != 1 ] || ! grep -q "^tinspect: $url: .*$pattern" "$tmp/err" ||
		[ -s "$tmp/out" ]; then
		fail "$url: wanted exit 6 and one line with '$pattern', got exit $rc: $(cat "$tmp/err")"
		return
	fi
	ok
}
expect_error "$A/missing/big.safetensors" "HTTP 404, not found"
expect_error "$A/files/no-such-file.safetensors" "HTTP 404, not found"
expect_error "$A/forbidden/big.safetensors" "HTTP 403, forbidden"
# ranges off: a small file is read from its whole body; a large one is refused before it is all sent
if "$bin" inspect "$A/norange/big.npy" >"$tmp/out" 2>"$tmp/err" &&
	grep -q '^  fetched        256 KiB (262,272) in 1 HTTP request$' "$tmp/out"; then ok; else
	fail "norange/big.npy: $(cat "$tmp/err")"; fi
expect_error "$A/norange/big.safetensors" "the server ignores range requests and sends all 6293784 bytes" \
	TINSPECT_HTTP_WHOLE_MAX=1000000

# what inject.py does wrong
if "$bin" inspect "$I/ok/big.safetensors" >"$tmp/out" 2>"$tmp/err" && grep -q 'layers.23.weight' "$tmp/out"; then ok; else
	fail "inject.py's control: $(cat "$tmp/err")"; fi
if "$bin" inspect "$I/flaky/big.safetensors" >"$tmp/out" 2>"$tmp/err" &&
	grep -q '^  fetched        128 KiB (131,072) in 2 HTTP requests$' "$tmp/out"; then ok; else
	fail "a 503 then an answer: $(cat "$tmp/err") $(grep fetched "$tmp/out")"; fi
# a redirect's target that expires (a signed CDN URL) is asked for again from the URL given
if "$bin" inspect "$I/sign/big.pt" >"$tmp/out" 2>"$tmp/err" && grep -q 'layers.23.weight' "$tmp/out" &&
	grep -q '^  fetched        .* in 5 HTTP requests$' "$tmp/out"; then ok; else
	fail "an expiring redirect target: $(cat "$tmp/err") $(grep fetched "$tmp/out")"; fi
expect_error "$I/etag/big.pt" 'the file changed on the server between two requests (ETag "v[0-9]*", then "v[0-9]*")'
expect_error "$I/grow/big.pt" "the file changed on the server between two requests (6297036 bytes, then 6298036)"
expect_error "$I/short/big.safetensors" "the server's body ended before its Content-Length (tried 4 times)"
expect_error "$I/stall/big.safetensors" "the server stalled" TINSPECT_HTTP_TIMEOUT=1
expect_error "$I/always500/big.safetensors" "HTTP 500, internal server error"
expect_error "$I/416/big.safetensors" "HTTP 416, the server refused the range"
expect_error "$I/401/big.safetensors" "HTTP 401, unauthorized"
expect_error "$I/badrange/big.safetensors" "the server answered range bytes=0-131071 with Content-Range 'bytes 1-131071/6293784'"

# https: verified always; --cacert names the CA that verifies a self-signed server
if [ -n "$tls" ]; then
	C=https://127.0.0.1:$pc
	expect_error "$C/files/big.safetensors" "the server's certificate does not verify (give its CA with --cacert)"
	if "$bin" inspect "$C/files/big.safetensors" --cacert "$tmp/cert.pem" >"$tmp/out" 2>"$tmp/err" &&
		grep -q 'layers.23.weight' "$tmp/out"; then ok; else
		fail "https with --cacert: $(cat "$tmp/err")"; fi
	if TINSPECT_CACERT=$tmp/cert.pem "$bin" inspect "$C/files/big.gguf" >/dev/null 2>"$tmp/err"; then ok; else
		fail "https with TINSPECT_CACERT: $(cat "$tmp/err")"; fi
else
	echo "remote: https cases SKIPPED: openssl cannot make a certificate"
fi

# a redirect is followed
if "$bin" inspect "$A/moved/big.safetensors" >"$tmp/out" 2>"$tmp/err" && grep -q 'layers.23.weight' "$tmp/out"; then ok; else
	fail "moved/big.safetensors: $(cat "$tmp/err")"; fi

# nobody listening: tried again, then one line
expect_error "http://127.0.0.1:$(free_port)/big.safetensors" "cannot connect to the server (tried 4 times)"
# a CA file that is not there
if [ -n "$tls" ]; then
	expect_error "https://127.0.0.1:$pc/files/big.safetensors" "cannot read the CA certificates" TINSPECT_CACERT=$tmp/no-such.pem
fi

# redirects are bounded
expect_error "$A/loop/big.safetensors" "more than 10 redirects"

# a URL tinspect refuses: exit 2, one line, no request
"$bin" inspect "http://user:secret@127.0.0.1:$pa/files/big.safetensors" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && grep -q 'credentials in a URL are refused' "$tmp/err" && ! grep -q secret "$tmp/err"; then ok; else
	fail "credentials in a URL: exit $rc: $(cat "$tmp/err")"; fi

# hf:// at HF_ENDPOINT: the token goes to the endpoint's host, not to the host its redirect leads to
: >"$tmp/logs/a.log"
: >"$tmp/logs/b.log"
token=hf_remote_test_token_$$
if HF_ENDPOINT=$A HF_TOKEN=$token "$bin" inspect hf://org/repo/big.safetensors >"$tmp/out" 2>"$tmp/err" &&
	grep -q 'layers.0.weight' "$tmp/out"; then ok; else
	fail "hf://org/repo/big.safetensors: $(cat "$tmp/err")"; fi
if grep -q "GET /org/repo/resolve/main/big.safetensors .*auth=Bearer $token " "$tmp/logs/a.log"; then ok; else
	fail "the token did not reach the Hub's host: $(cat "$tmp/logs/a.log")"; fi
if [ -s "$tmp/logs/b.log" ] && ! grep -q "$token" "$tmp/logs/b.log" && ! grep -q 'auth=Bearer' "$tmp/logs/b.log"; then ok; else
	fail "the token went to the redirect's host (or nothing did): $(cat "$tmp/logs/b.log")"; fi
if ! grep -q "$token" "$tmp/out" "$tmp/err"; then ok; else fail "the token was printed"; fi
# a token that would break its header is refused, not sent
HF_ENDPOINT=$A HF_TOKEN="$(printf 'abc\r\nX-Injected: 1')" "$bin" inspect hf://org/repo/big.safetensors >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && grep -q 'the Hub token holds a space or a control character' "$tmp/err"; then ok; else
	fail "a token with CR LF: exit $rc: $(cat "$tmp/err")"; fi
# hf://ORG/REPO@REVISION/PATH resolves at that revision
if HF_ENDPOINT=$A/ "$bin" inspect hf://org/repo@v1/big.gguf >"$tmp/out" 2>"$tmp/err" &&
	grep -q '^  format         gguf, 1 file$' "$tmp/out"; then ok; else
	fail "hf://org/repo@v1/big.gguf: $(cat "$tmp/err")"; fi
# hf://ORG/REPO: the repository as from_pretrained reads a folder (here its index, after a 404 for model.safetensors)
# a remote index's shards are opened at once: the server sees two asked for together
if "$bin" inspect "$I/together/sharded/model.safetensors.index.json" >"$tmp/out" 2>"$tmp/err" &&
	[ "$(curl -s "$I/together-max/" 2>/dev/null || "$py" -c "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).read().decode())" "$I/together-max/")" -ge 2 ]; then
	ok
else
	fail "a sharded model's shards are not opened at once: $(cat "$tmp/err")"
fi
if HF_ENDPOINT=$A "$bin" inspect hf://org/sharded >"$tmp/out" 2>"$tmp/err" &&
	grep -q '^  format         hf-sharded, 2 files$' "$tmp/out" && grep -q 'layers.23.weight' "$tmp/out"; then ok; else
	fail "hf://org/sharded: $(cat "$tmp/err")"; fi
env HF_ENDPOINT=$A "$bin" inspect hf://org/empty >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 3 ] && grep -q '^tinspect: hf://org/empty: a repository that holds no checkpoint' "$tmp/err"; then ok; else
	fail "hf://org/empty: exit $rc: $(cat "$tmp/err")"; fi
# --token-file, the same way, and the token never in --json
printf '%s\n' "$token-file" >"$tmp/token"
: >"$tmp/logs/a.log"
if HF_ENDPOINT=$A "$bin" inspect hf://org/repo/big.safetensors --json --token-file "$tmp/token" >"$tmp/out" 2>"$tmp/err" &&
	grep -q "auth=Bearer $token-file " "$tmp/logs/a.log" && ! grep -q "$token" "$tmp/out" "$tmp/err"; then ok; else
	fail "--token-file: $(cat "$tmp/err") $(cat "$tmp/logs/a.log")"; fi
# a token is not sent to a server that is not the Hub
: >"$tmp/logs/a.log"
if HF_TOKEN=$token "$bin" inspect "$A/files/big.safetensors" >/dev/null 2>&1 && ! grep -q 'auth=Bearer' "$tmp/logs/a.log"; then ok; else
	fail "HF_TOKEN went to a server that is not HF_ENDPOINT: $(cat "$tmp/logs/a.log")"; fi

# every other command, through the same server (tests/remote/commands.sh)
. "$here/commands.sh"

# the remote-read cache, --offline, tinspect cache, .netrc
. "$here/cache.sh"

if [ $failed = 0 ]; then
	echo "remote tests: $pass passed"
else
	echo "remote tests: FAILED ($pass passed)"
fi
exit $failed
