# tests/remote/cache.sh - the remote-read cache, --offline, `tinspect cache`, .netrc.
#
# Sourced by tests/remote/run.sh once its servers are up: uses its $bin, $A
# (nginx, port A, whose requests go to $tmp/logs/a.log), $pb, $root, $tmp,
# ok, fail and expect_error. Each case names its own cache folder
# (XDG_CACHE_HOME), so none depends on another's.

cache_case() { # NAME: a fresh, empty cache folder for the case NAME
	XDG_CACHE_HOME=$tmp/cache-$1
	export XDG_CACHE_HOME
}
# nginx logs a request after it has sent the answer, so a client may be gone before its line is written:
# the log is read, and emptied, once it has had a moment to settle
settle() { sleep 0.2; }
requests_a() { settle; wc -l <"$tmp/logs/a.log" | tr -d ' '; }
reset_logs() {
	settle
	: >"$tmp/logs/a.log"
	: >"$tmp/logs/b.log"
}
# inspect's output without its 'fetched' line, which says what the read cost
inspect_body() { "$bin" inspect "$@" 2>&1 | grep -v '^  fetched '; }

# a second inspect of a URL makes one request (a conditional one, answered 304) and reads the rest from disk
cache_case second
for f in big.pt many.safetensors big.gguf; do
	inspect_body "$A/files/$f" >"$tmp/first.out"
	reset_logs
	"$bin" inspect "$A/files/$f" >"$tmp/second.full" 2>&1
	grep -v '^  fetched ' "$tmp/second.full" >"$tmp/second.out"
	if cmp -s "$tmp/first.out" "$tmp/second.out" && [ "$(requests_a)" = 1 ] &&
		grep -q ' status=304$' "$tmp/logs/a.log" &&
		grep -q '^  fetched        0 B in 1 HTTP request$' "$tmp/second.full"; then ok; else
		fail "cache: a second inspect of $f: $(requests_a) requests: $(cat "$tmp/logs/a.log") $(diff "$tmp/first.out" "$tmp/second.out" | head -5)"
	fi
done

# --offline (and its environment variables): no request at all, the same listing
for how in --offline TINSPECT_OFFLINE=1 HF_HUB_OFFLINE=true; do
	reset_logs
	case $how in
	--*) inspect_body "$A/files/big.pt" "$how" >"$tmp/offline.out" ;;
	*) env "$how" "$bin" inspect "$A/files/big.pt" 2>&1 | grep -v '^  fetched ' >"$tmp/offline.out" ;;
	esac
	inspect_body "$root/big.pt" | sed "s#$root/#$A/files/#g" >"$tmp/local.out"
	if cmp -s "$tmp/local.out" "$tmp/offline.out" && [ "$(requests_a)" = 0 ]; then ok; else
		fail "cache: $how: $(requests_a) requests, $(diff "$tmp/local.out" "$tmp/offline.out" | head -5)"; fi
done
# offline misses: a URL never read, bytes never read (the tensors' data); one line each, exit 6
expect_error "$A/files/big.npy" "offline (--offline, TINSPECT_OFFLINE or HF_HUB_OFFLINE): the file is not in the cache" \
	TINSPECT_OFFLINE=1
"$bin" inspect "$A/files/big.pt" --offline --device cpu >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 6 ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
	grep -q "^tinspect: $A/files/big.pt: .*offline .*: bytes [0-9]*-[0-9]* of the file are not in the cache" "$tmp/err"; then
	ok; else fail "cache: --offline --device cpu: exit $rc: $(cat "$tmp/err")"; fi
# a repository read once, hf://ORG/REPO, reads again offline: the probes the cache lacks (a 404 is not
# kept) go on to the next file as a 404 does, to what was read; a repository never read is one line, exit 6
cache_case repo
HF_ENDPOINT=$A "$bin" inspect hf://org/sharded 2>&1 | grep -v '^  fetched ' >"$tmp/repo.online"
reset_logs
HF_ENDPOINT=$A "$bin" inspect hf://org/sharded --offline 2>&1 | grep -v '^  fetched ' >"$tmp/repo.offline"
if grep -q 'layers\.23\.weight' "$tmp/repo.online" && cmp -s "$tmp/repo.online" "$tmp/repo.offline" && [ "$(requests_a)" = 0 ]; then ok
else fail "cache: hf://org/sharded --offline: $(requests_a) requests, $(diff "$tmp/repo.online" "$tmp/repo.offline" | head -5)"; fi
HF_ENDPOINT=$A "$bin" inspect hf://org/never --offline >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 6 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ] &&
	grep -q "^tinspect: hf://org/never: offline .*: the cache holds no checkpoint from_pretrained reads" "$tmp/err"; then
	ok; else fail "cache: hf://org/never --offline: exit $rc: $(cat "$tmp/err")"; fi
cache_case second
"$bin" inspect "$A/files/big.pt" --offline --no-cache >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && grep -q 'give one' "$tmp/err"; then ok; else fail "cache: --offline --no-cache: exit $rc"; fi
# --no-cache: neither read (a full read again) nor written
reset_logs
XDG_CACHE_HOME=$tmp/cache-none "$bin" inspect "$A/files/big.pt" --no-cache >/dev/null 2>&1
settle
if [ "$(requests_a)" -gt 1 ] && ! grep -q 'status=304' "$tmp/logs/a.log" && [ ! -e "$tmp/cache-none" ]; then ok; else
	fail "cache: --no-cache: $(cat "$tmp/logs/a.log"), $(ls -R "$tmp/cache-none" 2>&1 | head -3)"; fi

# a new version on the server (another ETag): read again, never mixed with the old one
cache_case etag
mkdir -p "$root/changing"
cp "$root/big.safetensors" "$root/changing/model.bin"
inspect_body "$A/files/changing/model.bin" >/dev/null
cp "$root/big.gguf" "$root/changing/model.bin.new"
mv "$root/changing/model.bin.new" "$root/changing/model.bin"
reset_logs
inspect_body "$A/files/changing/model.bin" >"$tmp/changed.out"
etag=$("$py" -c 'import os,sys; s=os.stat(sys.argv[1]); print("\"%x-%x\"" % (int(s.st_mtime), s.st_size))' "$root/changing/model.bin")
if grep -q '^  format         gguf, 1 file$' "$tmp/changed.out" && grep -q ' status=206$' "$tmp/logs/a.log" &&
	"$bin" cache list | grep -qF "$etag" && [ "$(ls "$XDG_CACHE_HOME"/tinspect/v1/*/ | grep -vc head)" -ge 1 ] &&
	inspect_body "$A/files/changing/model.bin" --offline | grep -q '^  format         gguf, 1 file$'; then ok; else
	fail "cache: a changed ETag: $(cat "$tmp/logs/a.log") $(head -3 "$tmp/changed.out")"; fi
# the old version's blocks are gone: every block file is the new version's
old=$(ls "$XDG_CACHE_HOME"/tinspect/v1/*/ | grep -v head | cut -d- -f1 | sort -u | wc -l)
if [ "$old" = 1 ]; then ok; else fail "cache: $old versions of one URL kept"; fi

# a torn block (cut short, as by a crash without rename) or a corrupt one is never trusted: read again
cache_case torn
inspect_body "$A/files/big.pt" >"$tmp/first.out"
for how in truncate corrupt; do
	block=$(ls -S "$XDG_CACHE_HOME"/tinspect/v1/*/* | grep -v '/head$' | head -1)
	case $how in
	truncate) "$py" -c 'import os,sys; os.truncate(sys.argv[1], os.path.getsize(sys.argv[1]) // 2)' "$block" ;;
	corrupt) "$py" -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(1000); b=f.read(1); f.seek(1000); f.write(bytes([b[0]^1]))' "$block" ;;
	esac
	reset_logs
	inspect_body "$A/files/big.pt" >"$tmp/again.out"
	if cmp -s "$tmp/first.out" "$tmp/again.out" && [ "$(requests_a)" -ge 2 ] && grep -q ' status=206$' "$tmp/logs/a.log"; then
		ok; else fail "cache: a $how block: $(cat "$tmp/logs/a.log") $(ls -l "$block") $(diff "$tmp/first.out" "$tmp/again.out" | head -5)"; fi
done
# a torn head: the entry is a miss, read whole again (no conditional request)
head=$(ls "$XDG_CACHE_HOME"/tinspect/v1/*/head)
"$py" -c 'import os,sys; os.truncate(sys.argv[1], 20)' "$head"
reset_logs
if inspect_body "$A/files/big.pt" | cmp -s - "$tmp/first.out" && ! grep -q 'status=304' "$tmp/logs/a.log"; then ok; else
	fail "cache: a torn head: $(cat "$tmp/logs/a.log")"; fi

# several processes at once on one entry
cache_case parallel
pids=
for i in 1 2 3 4; do
	inspect_body "$A/files/many.pt" >"$tmp/parallel.$i" &
	pids="$pids $!"
done
wait $pids # not a bare wait: the servers run in the background too
same=yes
for i in 2 3 4; do cmp -s "$tmp/parallel.1" "$tmp/parallel.$i" || same=no; done
if [ $same = yes ] &&
	grep -q 'blocks.199.layer.99.weight' "$tmp/parallel.1" && inspect_body "$A/files/many.pt" --offline | cmp -s - "$tmp/parallel.1" &&
	! ls -a "$XDG_CACHE_HOME"/tinspect/v1/*/ | grep -q '^\.tmp-'; then ok; else
	fail "cache: four processes at once: $(diff "$tmp/parallel.1" "$tmp/parallel.2" | head -5) $(ls -a "$XDG_CACHE_HOME"/tinspect/v1/*/ | head)"; fi

# cache list and clear
cache_case list
"$bin" inspect "$A/files/big.gguf" >/dev/null 2>&1
npy_bytes=$("$bin" inspect "$A/files/big.npy" --json | fetched | cut -d' ' -f2)
"$bin" cache list --json >"$tmp/list.json"
if "$py" - "$tmp/list.json" "$A/files/" "$npy_bytes" <<'PY'; then ok; else fail "cache list --json: $(cat "$tmp/list.json")"; fi
import json, sys
d = json.load(open(sys.argv[1]))
e = {x["url"]: x for x in d["entries"]}
a, b = e[sys.argv[2] + "big.gguf"], e[sys.argv[2] + "big.npy"]
assert len(e) == 2 and d["schema"] == 1, e
assert b["size"] == 262272 and b["bytes"] == int(sys.argv[3]), b  # big.npy: every byte fetched is kept
assert 0 < a["bytes"] < a["size"] == 2097760, a
assert a["validator"].startswith('"') and a["last_used"] > 1700000000, a
PY
if "$bin" cache list | grep -q "^LAST USED .*KEPT .*SIZE .*VERSION .*URL" &&
	"$bin" cache list | grep -q "128 KiB *256 KiB .*$A/files/big.npy$"; then ok; else
	fail "cache list: $("$bin" cache list 2>&1)"; fi
if "$bin" cache clear "$A/files/big.npy" | grep -q '^removed 1 URL, ' && ! "$bin" cache list | grep -q big.npy &&
	"$bin" cache list | grep -q big.gguf; then ok; else fail "cache clear URL: $("$bin" cache list 2>&1)"; fi
"$bin" cache clear "$A/files/big.npy" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 1 ] && grep -q "^tinspect: cache: $A/files/big.npy: not in the cache$" "$tmp/err"; then ok; else
	fail "cache clear of a URL not cached: exit $rc: $(cat "$tmp/err")"; fi
if "$bin" cache clear | grep -q '^removed 1 URL, ' && [ "$("$bin" cache list)" = "the cache holds no URL" ]; then ok; else
	fail "cache clear: $("$bin" cache list 2>&1)"; fi
"$bin" cache lsit >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && grep -q "did you mean 'list'" "$tmp/err"; then ok; else fail "cache lsit: exit $rc: $(cat "$tmp/err")"; fi

# the bound: past TINSPECT_CACHE_MAX the least recently used URL goes
cache_case bound
"$bin" inspect "$A/files/big.safetensors" >/dev/null 2>&1
sleep 1
TINSPECT_CACHE_MAX=200K "$bin" inspect "$A/files/big.gguf" >/dev/null 2>&1
if "$bin" cache list | grep -q big.gguf && ! "$bin" cache list | grep -q big.safetensors; then ok; else
	fail "cache: TINSPECT_CACHE_MAX: $("$bin" cache list 2>&1)"; fi

# no token in the cache: hf:// with HF_TOKEN and --token-file
cache_case token
token=hf_cache_test_token_$$
HF_ENDPOINT=$A HF_TOKEN=$token "$bin" inspect hf://org/repo/big.safetensors >/dev/null 2>&1
HF_ENDPOINT=$A HF_TOKEN=$token "$bin" inspect hf://org/repo/big.safetensors >/dev/null 2>&1
printf '%s\n' "$token-file" >"$tmp/token"
HF_ENDPOINT=$A "$bin" inspect hf://org/repo/big.gguf --token-file "$tmp/token" >/dev/null 2>&1
if [ -n "$(ls "$XDG_CACHE_HOME"/tinspect/v1)" ] && ! grep -rq "$token" "$XDG_CACHE_HOME" && ! grep -rq "Bearer" "$XDG_CACHE_HOME" &&
	! grep -rq "127.0.0.1:$pb" "$XDG_CACHE_HOME"; then ok; else
	fail "cache: a token or a redirect's target in the cache folder: $(grep -rl "$token\|Bearer\|:$pb" "$XDG_CACHE_HOME")"; fi

# .netrc: a host's login and password go to that host alone, never across a redirect to another, never printed;
# a 'default' entry goes nowhere
cache_case netrc
printf 'machine localhost\n  login lu password "lp secret"\ndefault login du password dp\n' >"$tmp/netrc"
reset_logs
basic=$(printf 'lu:lp secret' | base64)
pa=${A##*:}
NETRC=$tmp/netrc "$bin" inspect "http://localhost:$pa/org/repo/resolve/main/big.safetensors" >"$tmp/out" 2>&1
settle
if grep -q "auth=Basic $basic " "$tmp/logs/a.log" && [ -s "$tmp/logs/b.log" ] && ! grep -q 'auth=Basic' "$tmp/logs/b.log" &&
	! grep -q 'secret\|lu:' "$tmp/out" && ! grep -rq secret "$XDG_CACHE_HOME"; then ok; else
	fail ".netrc: a: $(cat "$tmp/logs/a.log") b: $(cat "$tmp/logs/b.log") $(cat "$tmp/out" | tail -3)"; fi
reset_logs
NETRC=$tmp/netrc "$bin" inspect "$A/files/big.npy" >/dev/null 2>&1
settle
if [ -s "$tmp/logs/a.log" ] && ! grep -q 'auth=Basic' "$tmp/logs/a.log"; then ok; else
	fail ".netrc: a default entry or another host's sent to 127.0.0.1: $(cat "$tmp/logs/a.log")"; fi
# the Hub's host gets HF_TOKEN alone, never a .netrc's
printf 'machine 127.0.0.1 login hu password hp\n' >"$tmp/netrc"
reset_logs
HF_ENDPOINT=$A NETRC=$tmp/netrc "$bin" inspect hf://org/repo/big.npy --no-cache >/dev/null 2>&1
settle
if [ -s "$tmp/logs/a.log" ] && ! grep -q 'auth=Basic' "$tmp/logs/a.log"; then ok; else
	fail ".netrc: sent to the Hub's host: $(cat "$tmp/logs/a.log")"; fi
unset XDG_CACHE_HOME
XDG_CACHE_HOME=$tmp/cache
export XDG_CACHE_HOME
