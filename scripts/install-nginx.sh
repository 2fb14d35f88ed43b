#!/usr/bin/env bash
# nginx, the load balancer the team gateway's tests put in front of two
# replicas (started by the test, as its own process, on loopback).
exec bash "$(dirname "$0")/apt-install.sh" install-nginx \
  'command -v nginx || test -x /usr/sbin/nginx' \
  "the team gateway's load-balancer tests" nginx
