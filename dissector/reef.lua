-- Wireshark / tshark dissector for the reef transport header and its INT.
-- Usage: tshark -X lua_script:dissector/reef.lua -r trace.pcapng -V
--        wireshark -X lua_script:dissector/reef.lua trace.pcapng
-- Layout: see the package doc of reef/wire (UDP port 5140, 56-byte header, SACK blocks,
-- INT hop slots of 24 bytes, payload).

local reef = Proto("reef", "reef congestion-control transport")

local types = { [1] = "DATA", [2] = "ACK", [3] = "CNP" }

local f = {
  type        = ProtoField.uint8("reef.type", "Type", base.DEC, types),
  flags       = ProtoField.uint8("reef.flags", "Flags", base.HEX),
  ece         = ProtoField.bool("reef.flags.ece", "ECN echo", 8, nil, 0x01),
  int_req     = ProtoField.bool("reef.flags.int", "INT requested", 8, nil, 0x02),
  retx        = ProtoField.bool("reef.flags.retx", "Retransmission", 8, nil, 0x04),
  fin         = ProtoField.bool("reef.flags.fin", "Last packet of message", 8, nil, 0x08),
  mpd         = ProtoField.uint16("reef.mpd", "Max per-hop delay (units)", base.DEC),
  flow        = ProtoField.uint32("reef.flow", "Flow ID", base.DEC),
  seq         = ProtoField.uint64("reef.seq", "Sequence", base.DEC),
  ack         = ProtoField.uint64("reef.ack", "Cumulative ack", base.DEC),
  ts          = ProtoField.int64("reef.ts", "Send timestamp (ns)", base.DEC),
  echo_ts     = ProtoField.int64("reef.echo_ts", "Echoed timestamp (ns)", base.DEC),
  turnaround  = ProtoField.uint32("reef.turnaround", "Receiver turnaround (ns)", base.DEC),
  inflight    = ProtoField.uint32("reef.inflight", "In-flight bytes", base.DEC),
  echo_mpd    = ProtoField.uint16("reef.echo_mpd", "Echoed forward MPD (units)", base.DEC),
  nsack       = ProtoField.uint8("reef.nsack", "SACK blocks", base.DEC),
  hopcap      = ProtoField.uint8("reef.hopcap", "INT hop slots", base.DEC),
  nhops       = ProtoField.uint8("reef.nhops", "INT hops filled", base.DEC),
  path_hops   = ProtoField.uint8("reef.path_hops", "Path hops", base.DEC),
  payload_len = ProtoField.uint16("reef.payload_len", "Payload length", base.DEC),
  sack_start  = ProtoField.uint64("reef.sack.start", "SACK start", base.DEC),
  sack_end    = ProtoField.uint64("reef.sack.end", "SACK end", base.DEC),
  hop_ts      = ProtoField.int64("reef.hop.ts", "Hop timestamp (ns)", base.DEC),
  hop_tx      = ProtoField.uint64("reef.hop.tx_bytes", "Hop tx bytes", base.DEC),
  hop_qlen    = ProtoField.uint32("reef.hop.qlen", "Hop queue length (B)", base.DEC),
  hop_rate    = ProtoField.uint32("reef.hop.rate_kbps", "Hop link rate (kbit/s)", base.DEC),
}
reef.fields = f

local HEADER_LEN, SACK_LEN, HOP_LEN = 56, 16, 24

function reef.dissector(buf, pinfo, tree)
  if buf:len() < HEADER_LEN then return 0 end
  local t = buf(0, 1):uint()
  if types[t] == nil then return 0 end
  pinfo.cols.protocol = "REEF"
  local nsack, hopcap, nhops = buf(50, 1):uint(), buf(51, 1):uint(), buf(52, 1):uint()
  local total = HEADER_LEN + nsack * SACK_LEN + hopcap * HOP_LEN
  local sub = tree:add(reef, buf(0, math.min(total, buf:len())), "reef " .. types[t])
  sub:add(f.type, buf(0, 1))
  local fl = sub:add(f.flags, buf(1, 1))
  fl:add(f.ece, buf(1, 1)); fl:add(f.int_req, buf(1, 1)); fl:add(f.retx, buf(1, 1)); fl:add(f.fin, buf(1, 1))
  sub:add(f.mpd, buf(2, 2))
  sub:add(f.flow, buf(4, 4))
  sub:add(f.seq, buf(8, 8))
  sub:add(f.ack, buf(16, 8))
  sub:add(f.ts, buf(24, 8))
  sub:add(f.echo_ts, buf(32, 8))
  sub:add(f.turnaround, buf(40, 4))
  sub:add(f.inflight, buf(44, 4))
  sub:add(f.echo_mpd, buf(48, 2))
  sub:add(f.nsack, buf(50, 1))
  sub:add(f.hopcap, buf(51, 1))
  sub:add(f.nhops, buf(52, 1))
  sub:add(f.path_hops, buf(53, 1))
  sub:add(f.payload_len, buf(54, 2))
  local off = HEADER_LEN
  for i = 1, nsack do
    if off + SACK_LEN > buf:len() then break end
    local s = sub:add(buf(off, SACK_LEN), "SACK block " .. i)
    s:add(f.sack_start, buf(off, 8)); s:add(f.sack_end, buf(off + 8, 8))
    off = off + SACK_LEN
  end
  for i = 1, nhops do
    if off + HOP_LEN > buf:len() then break end
    local h = sub:add(buf(off, HOP_LEN), "INT hop " .. i)
    h:add(f.hop_ts, buf(off, 8)); h:add(f.hop_tx, buf(off + 8, 8))
    h:add(f.hop_qlen, buf(off + 16, 4)); h:add(f.hop_rate, buf(off + 20, 4))
    off = off + HOP_LEN
  end
  pinfo.cols.info = string.format("%s flow=%d seq=%s mpd=%d hops=%d", types[t], buf(4, 4):uint(),
    tostring(buf(8, 8):uint64()), buf(2, 2):uint(), nhops)
  return total
end

DissectorTable.get("udp.port"):add(5140, reef)

-- The release trailer reef's daemons append after the IP packet of every IPv4 frame
-- they send (afpacket trailer.go): the frame's Due, CLOCK_MONOTONIC ns (8 bytes,
-- big endian), then the magic 0x524545F1. Without this, Wireshark shows those 12 bytes
-- as an Ethernet trailer of another vendor's (vssmonitoring).
local trailer = Proto("reef_trailer", "reef release trailer")
local tf = {
  due   = ProtoField.uint64("reef_trailer.due", "Due (CLOCK_MONOTONIC ns)", base.DEC),
  magic = ProtoField.uint32("reef_trailer.magic", "Magic", base.HEX),
}
trailer.fields = tf

local TRAILER_LEN, TRAILER_MAGIC = 12, 0x524545F1

local function trailer_heuristic(buf, pinfo, tree)
  if buf:len() ~= TRAILER_LEN or buf(8, 4):uint() ~= TRAILER_MAGIC then return false end
  local t = tree:add(trailer, buf(0, TRAILER_LEN), "reef release trailer")
  t:add(tf.due, buf(0, 8))
  t:add(tf.magic, buf(8, 4))
  return true
end

trailer:register_heuristic("eth.trailer", trailer_heuristic)
