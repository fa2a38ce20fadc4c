# tests/remote/commands.sh - every command that reads a file reads a URL (sourced by tests/remote/run.sh).
#
# Uses run.sh's server and helpers: $bin, $root, $tmp, $py, $A (nginx: /files/ with ranges, /norange/
# without, /org/REPO/resolve/main/ redirected to port B as the Hub redirects to its CDN), ok and fail.
# Each command's output over a URL equals its output on the local file, apart from the name and the
# line that says what was fetched; the requests it took are bounded; each bad URL is one line.

# a config.json beside the shards: hf://org/sharded is a folder as from_pretrained finds it
printf '%s\n' '{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 2, "n_embd": 64,' \
	'"n_head": 2, "vocab_size": 1000, "n_positions": 128}' >"$root/sharded/config.json"

# The requests and bytes of a --json or --json-lines document's "fetched".
fetched_of() { "$py" -c 'import json,sys; f=json.loads(sys.stdin.readline()).get("fetched",{}); print(f.get("requests",0), f.get("bytes",0))'; }

# same_output NAME 'LOCAL ARGS' 'REMOTE ARGS' [ENV...]: one exit status, one stdout (the URL read as the
# path, the fetched line left out), and a fetched line in the remote one.
same_output() {
	name=$1 local_args=$2 remote_args=$3
	shift 3
	# shellcheck disable=SC2086
	(cd "$tmp" && "$bin" $local_args >"$tmp/c.local" 2>"$tmp/c.local.err")
	lrc=$?
	# shellcheck disable=SC2086
	(cd "$tmp" && env "$@" "$bin" $remote_args >"$tmp/c.remote" 2>"$tmp/c.remote.err")
	rrc=$?
	grep -v '^ *fetched \|read over a URL: ' "$tmp/c.remote" | sed -e "s#$A/[a-z]*/#$root/#g" -e "s#hf://org/sharded#$root/sharded#g" \
		>"$tmp/c.cmp"
	if [ $lrc != $rrc ] || ! cmp -s "$tmp/c.local" "$tmp/c.cmp"; then
		fail "$name: exit $rrc over http, $lrc locally: $(diff "$tmp/c.local" "$tmp/c.cmp" | head -5) $(cat "$tmp/c.remote.err")"
		return
	fi
	if ! grep -q 'fetched .* in [0-9]* HTTP requests\?$' "$tmp/c.remote" "$tmp/c.remote.err"; then
		fail "$name: no fetched line: $(tail -3 "$tmp/c.remote") $(cat "$tmp/c.remote.err")"
		return
	fi
	ok
}

same_output "scan big.pt" "scan $root/big.pt" "scan $A/files/big.pt"
same_output "scan the index" "scan $root/sharded/model.safetensors.index.json" \
	"scan $A/files/sharded/model.safetensors.index.json"
same_output "diff" "diff $root/big.pt $root/big.safetensors" "diff $A/files/big.pt $A/files/big.safetensors"
same_output "diff --values" "diff --values $root/big.pt $root/many.pt" "diff --values $A/files/big.pt $A/norange/many.pt"
same_output "memory of a checkpoint" "memory $root/big.pt" "memory $A/files/big.pt"
same_output "memory of hf://ORG/REPO" "memory $root/sharded --bind B=1 --bind T=16" \
	"memory hf://org/sharded --bind B=1 --bind T=16" HF_ENDPOINT=$A
same_output "params of hf://ORG/REPO" "params $root/sharded" "params hf://org/sharded" HF_ENDPOINT=$A
same_output "params of a config.json URL" "params $root/sharded/config.json" "params $A/files/sharded/config.json"
same_output "check hf://ORG/REPO" "check $root/sharded" "check hf://org/sharded" HF_ENDPOINT=$A
same_output "describe hf://ORG/REPO" "describe $root/sharded" "describe hf://org/sharded" HF_ENDPOINT=$A
if "$bin" materialize "$A/files/big.pt" --fill load >"$tmp/out" 2>"$tmp/err" && grep -q '^placed 24 storages, 6.00 MiB' "$tmp/out" &&
	grep -q '^fetched .* in [0-9]* HTTP requests$' "$tmp/out"; then ok; else fail "materialize --fill load: $(cat "$tmp/err")"; fi

# the JSON says what was fetched too; scan of a 6 MB torch zip reads its directory and data.pkl alone
# (the bounds are a cold read's: --no-cache)
"$bin" scan --no-cache --json-lines "$A/files/big.pt" >"$tmp/out" 2>"$tmp/err"
set -- $(fetched_of <"$tmp/out")
if [ "${1:-0}" -ge 1 ] && [ "$1" -le 4 ] && [ "$2" -lt 1000000 ] && [ "$(wc -c <"$root/big.pt")" -gt 6000000 ]; then
	echo "remote: scan big.pt: $1 requests, $2 bytes"
	ok
else fail "scan big.pt over http: $* (at most 4 requests and 1 MB): $(cat "$tmp/err")"; fi
# 20,000 tensors: a directory of 2 MB and a data.pkl of 2 MB, each asked for whole (the first 128 KiB, the
# end records, the directory, the byteorder record's header after data.pkl, data.pkl)
"$bin" scan --no-cache --json-lines "$A/files/many.pt" >"$tmp/out" 2>"$tmp/err"
set -- $(fetched_of <"$tmp/out")
if [ "${1:-0}" -ge 1 ] && [ "$1" -le 5 ]; then ok; else fail "scan many.pt over http: $* requests: $(cat "$tmp/err")"; fi
# the same verdict and findings, apart from the note on what a URL's scan leaves out
"$bin" scan --json "$root/many.pt" >"$tmp/local.json"
"$bin" scan --json "$A/files/many.pt" >"$tmp/remote.json"
"$py" - "$tmp/local.json" "$tmp/remote.json" <<'PY' && ok || fail "scan many.pt: the URL's findings differ from the local file's"
import json, sys
a, b = (json.load(open(p))["files"][0] for p in sys.argv[1:])
notes = [f for f in b["findings"] if "read over a URL" in f["message"]]
rest = [f for f in b["findings"] if f not in notes]
sys.exit(0 if len(notes) == 1 and rest == a["findings"] and a["verdict"] == b["verdict"] else 1)
PY
for c in "memory $A/files/big.pt --json" "diff $A/files/big.pt $A/files/big.safetensors --json" \
	"params $A/files/sharded/config.json --json"; do
	# shellcheck disable=SC2086
	"$bin" $c >"$tmp/out" 2>"$tmp/err"
	set -- $("$py" -c 'import json,sys; f=json.load(sys.stdin).get("fetched",{}); print(f.get("requests",0), f.get("bytes",0))' <"$tmp/out")
	if [ "${1:-0}" -ge 1 ]; then ok; else fail "$c: no \"fetched\" in its JSON: $(cat "$tmp/err")"; fi
done

# convert streams: the file written from a URL is the file written from the local copy, with and without ranges
for where in files norange; do
	rm -f "$tmp/local.safetensors" "$tmp/remote.safetensors"
	"$bin" convert "$root/big.pt" -o "$tmp/local.safetensors" >/dev/null 2>&1
	if "$bin" convert "$A/$where/big.pt" -o "$tmp/remote.safetensors" >"$tmp/out" 2>"$tmp/err" &&
		cmp -s "$tmp/local.safetensors" "$tmp/remote.safetensors" && grep -q '^fetched .* in [0-9]* HTTP request' "$tmp/out"
	then ok; else fail "convert $where/big.pt: $(cat "$tmp/err")"; fi
done
# without ranges a file is read from its one whole body: one request
"$bin" scan --no-cache --json-lines "$A/norange/big.pt" >"$tmp/out" 2>"$tmp/err"
set -- $(fetched_of <"$tmp/out")
if [ "${1:-0}" = 1 ] && grep -q '"verdict":"safe"' "$tmp/out"; then ok; else
	fail "scan norange/big.pt: $* requests: $(cat "$tmp/err")"; fi

# the Hub's redirect to another host: scan, diff and convert through it
if HF_ENDPOINT=$A "$bin" scan -q hf://org/repo/big.pt >"$tmp/out" 2>"$tmp/err" &&
	grep -q '^hf://org/repo/big.pt: verdict: safe' "$tmp/out"; then ok; else fail "scan hf://org/repo/big.pt: $(cat "$tmp/err")"; fi
if HF_ENDPOINT=$A "$bin" diff hf://org/repo/big.pt "$root/big.pt" >"$tmp/out" 2>"$tmp/err" &&
	grep -q 'identical, 24 tensors compared' "$tmp/out"; then ok; else fail "diff hf://org/repo/big.pt: $(cat "$tmp/out" "$tmp/err")"; fi
rm -f "$tmp/hub.safetensors"
if HF_ENDPOINT=$A "$bin" convert hf://org/repo/big.pt -o "$tmp/hub.safetensors" >/dev/null 2>"$tmp/err" &&
	cmp -s "$tmp/local.safetensors" "$tmp/hub.safetensors"; then ok; else fail "convert hf://org/repo/big.pt: $(cat "$tmp/err")"; fi
HF_ENDPOINT=$A "$bin" scan -q hf://org/sharded >"$tmp/out" 2>"$tmp/err"
if grep -q '^hf://org/sharded: verdict: safe' "$tmp/out"; then ok; else fail "scan hf://org/sharded: $(cat "$tmp/err")"; fi

# many URLs: one line per file as it finishes, at most -j at once, and the exit status of the worst
"$bin" scan -j 3 --json-lines "$A/files/big.pt" "$A/files/big.safetensors" "$A/files/big.gguf" "$A/files/many.pt" \
	"$A/files/sharded/model.safetensors.index.json" "$A/files/no-such.pt" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 6 ] && [ "$(wc -l <"$tmp/out")" = 6 ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
	grep -q "no-such.pt: HTTP 404, not found" "$tmp/err" &&
	"$py" -c 'import json,sys; [json.loads(l) for l in sys.stdin]' <"$tmp/out"; then ok; else
	fail "scan -j 3 --json-lines: exit $rc: $(cat "$tmp/err")"; fi
"$bin" scan -j 0 "$A/files/big.pt" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && grep -q "scan: -j wants a whole number from 1 to 256, not '0'" "$tmp/err"; then ok; else
	fail "scan -j 0: exit $rc: $(cat "$tmp/err")"; fi

# A URL a command cannot use: one line and its exit status, for every command.
# (an unsupported scheme and credentials: 2; a Hub path that does not exist: 6, the server's 404)
bad_url() { # CODE PATTERN URL
	code=$1 pattern=$2 url=$3
	for c in scan check diff memory describe params convert materialize; do
		case $c in
		diff) args="$url $root/big.pt" ;;
		check) args="$root/sharded/config.json $url" ;;
		convert) args="$url -o $tmp/never.safetensors" ;;
		materialize) args="$url --fill load" ;;
		*) args=$url ;;
		esac
		# shellcheck disable=SC2086
		HF_ENDPOINT=$A "$bin" $c $args >"$tmp/out" 2>"$tmp/err"
		rc=$?
		if [ $rc != "$code" ] || [ "$(wc -l <"$tmp/err")" != 1 ] || ! grep -q "$pattern" "$tmp/err" ||
			grep -q secret "$tmp/err"; then
			fail "$c $url: wanted exit $code and one line with '$pattern', got exit $rc: $(cat "$tmp/err")"
			continue
		fi
		ok
	done
}
bad_url 2 "^tinspect: ftp://127.0.0.1/big.pt: the URL scheme 'ftp' is not one tinspect reads" ftp://127.0.0.1/big.pt
bad_url 2 "credentials in a URL are refused" "http://user:secret@127.0.0.1/big.pt"
bad_url 6 "^tinspect: hf://org/repo/no-such-file.pt: HTTP 404, not found" hf://org/repo/no-such-file.pt
