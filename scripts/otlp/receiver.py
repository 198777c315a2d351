"""An OTLP/gRPC metrics receiver for the tests: listens on 127.0.0.1 (a
free port unless one is given), prints "listening PORT", then one JSON line
per data point of every export it receives, decoded with the OpenTelemetry
project's own protobuf definitions (opentelemetry-proto):

  {"resource": {...}, "name": ..., "type": "sum"|"gauge", "monotonic": bool,
   "temporality": "cumulative"|"delta"|..., "attributes": {...}, "value": N}

It answers every export with success. Stops on SIGTERM, SIGINT or when its
stdin closes. Run with PYTHONPATH=scripts/otlp/pylib (scripts/otlp/install.sh).
"""

import json
import signal
import sys
import threading
from concurrent import futures

import grpc
from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2,
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.metrics.v1 import metrics_pb2

TEMPORALITY = {
    metrics_pb2.AGGREGATION_TEMPORALITY_UNSPECIFIED: "unspecified",
    metrics_pb2.AGGREGATION_TEMPORALITY_DELTA: "delta",
    metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE: "cumulative",
}

out_lock = threading.Lock()


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attributes(kvs):
    return {kv.key: value_of(kv.value) for kv in kvs}


def number(point):
    kind = point.WhichOneof("value")
    return getattr(point, kind) if kind else None


class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
    def Export(self, request, context):
        lines = []
        for rm in request.resource_metrics:
            resource = attributes(rm.resource.attributes)
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    kind = metric.WhichOneof("data")
                    if kind == "sum":
                        points = metric.sum.data_points
                        extra = {
                            "monotonic": metric.sum.is_monotonic,
                            "temporality": TEMPORALITY.get(
                                metric.sum.aggregation_temporality, "other"
                            ),
                        }
                    elif kind == "gauge":
                        points = metric.gauge.data_points
                        extra = {}
                    else:
                        points = []
                        extra = {}
                    for p in points:
                        line = {
                            "resource": resource,
                            "name": metric.name,
                            "type": kind,
                            "attributes": attributes(p.attributes),
                            "value": number(p),
                        }
                        line.update(extra)
                        lines.append(json.dumps(line, sort_keys=True))
        with out_lock:
            for line in lines:
                print(line)
            sys.stdout.flush()
        return metrics_service_pb2.ExportMetricsServiceResponse()


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print(f"listening {bound}", flush=True)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())

    def watch_stdin():
        while sys.stdin.read(4096):
            pass
        done.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    done.wait()
    server.stop(grace=1).wait()


if __name__ == "__main__":
    main()
