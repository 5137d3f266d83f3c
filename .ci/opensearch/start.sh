#!/usr/bin/env bash
# A real OpenSearch 2 node on 127.0.0.1, in the foreground, until Ctrl-C (or SIGTERM).
#   .ci/opensearch/start.sh [--port 9200] [--transport-port 9400]
# The first start resolves pom.xml with Maven (into ~/.m2) and compiles the launcher into a cache
# keyed by what it is built from; later starts need neither Maven nor the network.
# Prints "READY http://127.0.0.1:<port> opensearch <version>" when the node takes requests.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

port=9200
transport_port=""
while [ $# -gt 0 ]; do
    case "$1" in
        --port) port="$2"; shift 2 ;;
        --transport-port) transport_port="$2"; shift 2 ;;
        -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
        *) echo "opensearch: unknown option $1" >&2; exit 2 ;;
    esac
done
# Off 9300, where another node (a developer's own) would have its transport.
transport_port="${transport_port:-$((port + 200))}"

for tool in java javac mvn; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "opensearch: $tool is missing (Java 17 with Maven: apt-get install openjdk-17-jdk-headless maven)" >&2
        exit 1
    fi
done

digest=$(cat "$here/pom.xml" "$here"/src/main/java/oaiharvest/*.java | sha256sum | cut -c1-16)
cache="${OAIHARVEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oarepo-oaipmh-harvester}/opensearch-$digest"
mkdir -p "$cache"
(
    # Two first starts at once (a developer's and a test session's) build once.
    flock 9
    if [ ! -s "$cache/classpath" ] || [ ! -d "$cache/classes/oaiharvest" ]; then
        echo "opensearch: resolving the node from Maven Central (first start only)" >&2
        mvn -q -B -f "$here/pom.xml" dependency:build-classpath \
            -Dmdep.outputFile="$cache/classpath.tmp" >&2
        rm -rf "$cache/classes"
        javac -nowarn -d "$cache/classes" -cp "$(cat "$cache/classpath.tmp")" \
            "$here"/src/main/java/oaiharvest/*.java
        mv "$cache/classpath.tmp" "$cache/classpath"
    fi
) 9>"$cache/.lock"

exec java -Xms1g -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.disable.jmx=true -Dopensearch.set.netty.runtime.available.processors=false \
    -cp "$cache/classes:$(cat "$cache/classpath")" oaiharvest.SingleNode "$port" "$transport_port"
