#!/bin/sh
# Installs the Debian packages tinspect needs, when they are missing.
# Usage: install-deps.sh build|test|ci|fuzz
#   build: compiler, libzip, cJSON, OpenBLAS, oneDNN (libdnnl-dev: the header run's convolutions are
#          built against; the library is loaded with dlopen when run convolves, our own kernels without it),
#          libcurl (its header; libcurl4 is loaded with dlopen when a command reads a URL)
#   test:  build + Criterion, valgrind (make valgrind), groff, mandoc and jq (the docs test), nginx
#          (tests/remote: a real web server on localhost, started and stopped by the test),
#          xmllint (libxml2-utils: the JUnit XML against tests/ci/junit.xsd)
#   ci:    test + PyTorch for the conformance test and the benchmark, node and npm
#          for the GGUF conformance (@huggingface/gguf)
#   fuzz:  build + clang with libFuzzer's runtime, python3 for the seeds (make fuzz)
# As root it runs apt-get; otherwise it prints the exact command and fails.
set -eu
what=${1:-build}
pkgs="gcc make pkg-config libzip-dev libcjson-dev libopenblas-dev libdnnl-dev libcurl4-openssl-dev"
case $what in
build) ;;
test) pkgs="$pkgs libcriterion-dev valgrind groff-base mandoc jq libxml2-utils nginx openssl" ;;
ci) pkgs="$pkgs libcriterion-dev valgrind groff-base mandoc jq libxml2-utils nginx openssl python3-torch python3-torchvision unzip" ;;
fuzz) pkgs="$pkgs clang libclang-rt-dev python3" ;;
*) echo "install-deps.sh: unknown set '$what' (build, test, ci or fuzz)" >&2; exit 2 ;;
esac
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
# node and npm (the GGUF conformance test reads our files with npm's
# @huggingface/gguf) may come from another package than Debian's npm, which
# conflicts with it: a command on PATH is enough, and without one the test
# says it is skipped, so a failed install is not fatal.
if [ "$what" = ci ] && ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null ||
			echo "install-deps.sh: nodejs and npm did not install; the GGUF conformance test will be skipped" >&2
	else
		echo "tinspect's GGUF conformance test needs node and npm: sudo apt-get install -y nodejs npm" >&2
	fi
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
	echo "installing:$missing" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
	echo "tinspect needs:$missing" >&2
	echo "run: sudo apt-get install -y$missing" >&2
	exit 1
fi
