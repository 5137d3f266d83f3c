#!/usr/bin/env bash
# PostgreSQL 15, Redis and RabbitMQ on their usual 127.0.0.1 ports, for the tests.
#
# Idempotent: a service that already answers on its port is left alone (a developer's own, or one
# this script started earlier); a missing one is installed from Debian's packages and started.
# Installing needs root and apt; without them it says what to run instead and fails.
set -euo pipefail

PG_VERSION="${PG_VERSION:-15}"
PG_PORT=5432
REDIS_PORT=6379
RABBITMQ_PORT=5672

say() { echo "services: $*" >&2; }

answers() {  # answers PORT: something listens on 127.0.0.1:PORT
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

wait_for_port() {  # wait_for_port PORT NAME SECONDS
    for _ in $(seq 1 "$3"); do
        answers "$1" && return 0
        sleep 1
    done
    say "$2 did not open 127.0.0.1:$1 within $3 s"
    return 1
}

apt_updated=""
apt_install() {
    if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
        say "$* missing and this is not root with apt-get."
        say "Install them (sudo apt-get install $*) or start PostgreSQL $PG_VERSION, Redis and"
        say "RabbitMQ on 127.0.0.1:$PG_PORT/$REDIS_PORT/$RABBITMQ_PORT yourself, then run again."
        exit 1
    fi
    if [ -z "$apt_updated" ]; then
        apt-get update -qq
        apt_updated=1
    fi
    say "installing $* from Debian's packages"
    # policy-rc.d: the packages' own start scripts need systemd, which does not run here; this
    # script starts the servers itself.
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
    rm -f /usr/sbin/policy-rc.d
}

start_postgresql() {
    if answers "$PG_PORT"; then
        return 0
    fi
    if [ ! -x "/usr/lib/postgresql/$PG_VERSION/bin/postgres" ]; then
        apt_install "postgresql-$PG_VERSION" "postgresql-client-$PG_VERSION"
    fi
    if [ "$(id -u)" != "0" ]; then
        say "PostgreSQL is installed but not running; start it (sudo pg_ctlcluster $PG_VERSION main start)"
        exit 1
    fi
    if [ ! -d "/etc/postgresql/$PG_VERSION/main" ]; then
        pg_createcluster "$PG_VERSION" main >/dev/null
    fi
    local hba="/etc/postgresql/$PG_VERSION/main/pg_hba.conf"
    # The tests connect as postgres without a password: trust on loopback only, first match wins.
    if ! grep -q '^# oarepo-oaipmh-harvester tests' "$hba"; then
        local original
        original=$(cat "$hba")
        {
            echo "# oarepo-oaipmh-harvester tests: trust on loopback"
            echo "host all all 127.0.0.1/32 trust"
            echo "host all all ::1/128 trust"
            echo "$original"
        } > "$hba"
    fi
    pg_ctlcluster "$PG_VERSION" main start -- -o "-c listen_addresses=127.0.0.1 -c port=$PG_PORT" \
        || pg_ctlcluster "$PG_VERSION" main restart
    wait_for_port "$PG_PORT" PostgreSQL 60
    say "PostgreSQL $PG_VERSION on 127.0.0.1:$PG_PORT"
}

start_redis() {
    if answers "$REDIS_PORT"; then
        return 0
    fi
    command -v redis-server >/dev/null 2>&1 || apt_install redis-server
    redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes --save '' --appendonly no \
        --logfile /tmp/oaiharvest-redis.log >/dev/null
    wait_for_port "$REDIS_PORT" Redis 30
    say "Redis on 127.0.0.1:$REDIS_PORT"
}

start_rabbitmq() {
    if answers "$RABBITMQ_PORT"; then
        return 0
    fi
    command -v rabbitmq-server >/dev/null 2>&1 || apt_install rabbitmq-server
    if [ "$(id -u)" = "0" ] && id rabbitmq >/dev/null 2>&1; then
        # Started as its own user, as the package means it to run (its files belong to it).
        su -s /bin/sh rabbitmq -c "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 rabbitmq-server -detached" \
            >/dev/null 2>&1
    else
        RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 rabbitmq-server -detached >/dev/null 2>&1
    fi
    wait_for_port "$RABBITMQ_PORT" RabbitMQ 90
    say "RabbitMQ on 127.0.0.1:$RABBITMQ_PORT (guest/guest)"
}

start_postgresql
start_redis
start_rabbitmq
