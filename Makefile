# The two commands: `make run` starts the stack, `make test` runs every test.
.PHONY: run run-foreground stop test build bench-ingest bench-fanout bench-tracking bench-processor bench-catchup bench-sender bench-latency bench-soak bench-chaos bench-flood bench-s3-store bench-small-objects push-mocks setup fuzz

run:
	scripts/run

run-foreground:
	scripts/run --foreground

stop:
	scripts/stop

test:
	scripts/test

fuzz:
	scripts/fuzz

setup:
	scripts/setup

build:
	swift build

bench-ingest:
	scripts/bench-ingest

bench-fanout:
	scripts/bench-fanout

bench-tracking:
	scripts/bench-tracking

bench-processor:
	scripts/bench-processor

bench-catchup:
	scripts/bench-catchup

bench-sender:
	scripts/bench-sender

bench-latency:
	scripts/bench-latency --durable

bench-soak:
	scripts/bench-soak --durable --minutes 30 --rate 25

# Ten minutes of mixed load while processor, sender, ingest and broker are killed and restarted.
bench-chaos:
	scripts/bench-chaos

bench-flood:
	scripts/bench-flood

bench-s3-store:
	scripts/bench-s3-store

bench-small-objects:
	scripts/bench-small-objects

# The mock APNs and FCM servers in the background (scripts/push-mocks stop ends them).
push-mocks:
	scripts/push-mocks start
