#!/usr/bin/env bash
# Installs what receiver.py needs (requirements.txt: opentelemetry-proto,
# grpcio, protobuf) into scripts/otlp/pylib with pip --target; does nothing
# when the pinned versions are there. The folder is git-ignored.
set -euo pipefail
cd "$(dirname "$0")"

want=$(sed -n 's/^opentelemetry-proto==//p' requirements.txt)
grpc=$(sed -n 's/^grpcio==//p' requirements.txt)
if [ -d "pylib/opentelemetry_proto-$want.dist-info" ] && [ -d "pylib/grpcio-$grpc.dist-info" ] \
  && PYTHONPATH=pylib python3 -c "import grpc; from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc" 2>/dev/null; then
  echo "opentelemetry-proto $want, grpcio $grpc: installed (scripts/otlp/pylib)"
else
  echo "== installing opentelemetry-proto $want and grpcio $grpc into scripts/otlp/pylib"
  rm -rf pylib
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
    --no-input --target pylib -r requirements.txt
fi
