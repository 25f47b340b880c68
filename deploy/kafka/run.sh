#!/usr/bin/env bash
# Starts one Apache Kafka node (KRaft, combined broker and controller) on
# loopback in the foreground, for running the services against the real
# broker by hand: `make kafka`, then point --brokers at it. Ctrl-C stops it.
#
#   KAFKA_VERSION  the version (default: the one deploy/kafka/pom.xml pins)
#   KAFKA_PORT     the client listener, 127.0.0.1 (default 9092); the
#                  controller listens on KAFKA_PORT+1
#   KAFKA_DIR      data, config and jars (default out/kafka); the node is
#                  formatted once and keeps its data between runs
#   KAFKA_HEAP_MB  the JVM heap (default 1024)
#
# Needs java (17 or newer) and mvn; the jars come from Maven Central.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
pom="$root/deploy/kafka/pom.xml"
version="${KAFKA_VERSION:-$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")}"
port="${KAFKA_PORT:-9092}"
dir="${KAFKA_DIR:-$root/out/kafka}"
heap="${KAFKA_HEAP_MB:-1024}"
for tool in java mvn; do
  command -v "$tool" >/dev/null || { echo "make kafka: $tool not found (needs Java 17+ and Maven)" >&2; exit 1; }
done
libs="$dir/libs-$version"
if [ ! -f "$libs/.complete" ]; then
  echo "resolving Apache Kafka $version from Maven Central into $libs" >&2
  rm -rf "$libs.partial"
  mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -Dkafka.version="$version" -DoutputDirectory="$libs.partial"
  rm -rf "$libs" && mv "$libs.partial" "$libs" && echo "$version" >"$libs/.complete"
fi
data="$dir/data-$version"
mkdir -p "$dir"
cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$((port + 1))
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$((port + 1))
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$data
num.partitions=4
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
EOF
cat >"$dir/log4j2.properties" <<'EOF'
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
EOF
jvm=(-Xmx"${heap}"m -Xms256m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
  -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$libs/*")
if [ ! -f "$data/meta.properties" ]; then
  id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
  java "${jvm[@]}" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" >/dev/null
fi
echo "Apache Kafka $version on 127.0.0.1:$port (data in $data); Ctrl-C stops it" >&2
exec java "${jvm[@]}" kafka.Kafka "$dir/server.properties"
