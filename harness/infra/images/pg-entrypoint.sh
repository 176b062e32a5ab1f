#!/bin/sh
# chaoslab's PostgreSQL entrypoint: the official image's first-run contract
# in a smaller form. As root it makes $PGDATA and the socket directory the
# postgres user's and runs itself again as that user; as postgres, an empty
# $PGDATA is initialised (initdb with POSTGRES_USER, POSTGRES_INITDB_ARGS
# and POSTGRES_HOST_AUTH_METHOD, default trust, for every host and for
# replication) before the command runs. Any other command runs as given.
set -eu
if [ "${1#-}" != "$1" ]; then
	set -- postgres "$@"
fi
if [ "$1" != postgres ]; then
	exec "$@"
fi
: "${PGDATA:=/var/lib/postgresql/data}"
if [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA" /var/run/postgresql
	chown postgres:postgres "$PGDATA" /var/run/postgresql
	chmod 700 "$PGDATA"
	exec runuser -u postgres -- "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	auth="${POSTGRES_HOST_AUTH_METHOD:-trust}"
	# shellcheck disable=SC2086
	initdb -D "$PGDATA" --username="${POSTGRES_USER:-postgres}" --auth="$auth" ${POSTGRES_INITDB_ARGS:-}
	printf 'host all all all %s\nhost replication all all %s\n' "$auth" "$auth" >>"$PGDATA/pg_hba.conf"
	printf "listen_addresses = '*'\n" >>"$PGDATA/postgresql.conf"
fi
exec "$@"
