# PostgreSQL 15 + pgTAP + plpgsql_check + RabbitMQ + PgBouncer + Chromium + FlowForge, able to run
# `make test` (and `make demo`) in one image:
#   docker build -t flowforge . && docker run --rm flowforge
# Debian bookworm's own PostgreSQL 15 is used (not the postgres image) so the
# cluster is managed with pg_ctlcluster, exactly as on a developer machine.
FROM debian:bookworm-slim

ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      postgresql-15 postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl \
      postgresql-15-plpgsql-check rabbitmq-server pgbouncer chromium chromium-driver \
      python3 python3-venv make ca-certificates passwd git openssl curl \
 && rm -rf /var/lib/apt/lists/*

# The test suite logs in as postgres over 127.0.0.1 without a password.
RUN printf '%s\n' \
      'local all all trust' \
      'host  all all 127.0.0.1/32 trust' \
      'host  all all ::1/128 trust' \
      > /etc/postgresql/15/main/pg_hba.conf

WORKDIR /flowforge
COPY . .
RUN rm -rf .venv .flowforge && make install

CMD ["make", "test"]
