#!/bin/bash
# SPDX-License-Identifier: MIT
# Raw and packet sockets let a privileged agent write the destination into
# the packet itself: SOCK_RAW/IPPROTO_RAW with a sockaddr naming the allowed
# 127.0.0.1 but an IP header for the forbidden 127.0.0.2, and AF_PACKET on lo.
# Neither may put a frame carrying the marker on the wire (a sniffer on lo,
# outside the sandbox, is the witness).
. "$(dirname "$0")/lib.sh"
require_root
setup
# Raw and packet sockets need CAP_NET_RAW: the agent runs as root.
export SHK_USER=0
start_listener --sniff-lo shk-raw
POL=$(policy raw <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
E=$(helper shk-escape)
shk "$POL" -- "$E" raw "$ALLOWED" "$FORBIDDEN" "$LPORT"
show_run
raw=$(answer)
shk "$POL" -- "$E" packet "$FORBIDDEN" "$LPORT"
show_run
pkt=$(answer)
sleep 0.3
expect_eq "frames with the marker on lo (raw: $raw, packet: $pkt)" "$(arrivals lo-frames udp)" 0
expect_no_arrival "raw/packet" "$FORBIDDEN"
expect_in "raw socket send" "$raw" EPERM EACCES
expect_in "packet socket send" "$pkt" EPERM EACCES
finish
