-- sltp.lua — a Wireshark dissector for SLTP as Peregrine speaks it
-- (protocol version 1, docs/protocol.md).
--
-- Use:   wireshark -X lua_script:tools/wireshark/sltp.lua capture.pcapng
--        tshark -X lua_script:tools/wireshark/sltp.lua -r capture.pcapng -O sltp
-- or copy this file into Wireshark's personal plugins folder
-- (Help → About → Folders → Personal Lua Plugins).
--
-- What it shows: the 20-byte base header with every field and flag
-- (docs/protocol.md §2–§4), and the payload of each of the 15 packet types
-- (§6): START/REJECT TLVs, DATA stream frames (skip frames included), ACK
-- ranges with the credit, ACK-frequency and ECN sections, NACK ranges and
-- blocks, ECHO probes, CWIN, JOIN/LEAVE, and the packet number of the rest.
-- Display filter: `sltp`, fields `sltp.*` (e.g. `sltp.type == 3`,
-- `sltp.frame.stream_id == 1`).
--
-- Registration: on UDP port 4433 (a preference, `sltp.port`) and as a
-- heuristic dissector on every UDP datagram. The heuristic accepts a
-- datagram only when its TOTAL_LEN equals the UDP payload's length, its
-- PK_TYPE is 1–15 and, if ST_CKS is set, its Internet checksum verifies —
-- one false positive in ~10^6 random datagrams before the checksum test.
--
-- Encryption: a connection that negotiated the SECURITY TLV seals every
-- packet but START and REJECT (ciphertext + 16-byte tag after the packet
-- number; the header and packet number stay in the clear). The header
-- cannot say so, so the dissector remembers, per UDP address pair, whether
-- a START with SECURITY was seen (both directions of the pair share the
-- state); a packet of such a pair is shown as "protected payload" plus the
-- tag. When no handshake was captured, it tries the plain layout and shows
-- the payload as protected if the plain layout does not parse exactly.
-- Decryption with PEREGRINE_KEYLOG is not done here: Wireshark's Lua API
-- has no AEAD primitive, and doing ChaCha20-Poly1305 / AES-GCM in pure Lua
-- would be slow and a second implementation to keep correct. Decrypt with
-- the key log outside Wireshark instead (docs/security.md).

-- Wireshark 4.0 embeds Lua 5.2 (no bitwise operators); `bit32` there,
-- LuaBitOp's `bit` in every version.
local bitlib = bit32 or bit
local band, bnot, rshift = bitlib.band, bitlib.bnot, bitlib.rshift

local sltp = Proto("sltp", "Simple Lightweight Transport Protocol (Peregrine)")

local TYPE_NAMES = {
    [0] = "reserved", [1] = "START", [2] = "REJECT", [3] = "DATA", [4] = "ACK",
    [5] = "NACK", [6] = "END", [7] = "FIN", [8] = "ECHO", [9] = "ECHO_1",
    [10] = "ECHO_2", [11] = "STATUS", [12] = "IDLE", [13] = "CWIN",
    [14] = "JOIN", [15] = "LEAVE",
}
local TLV_NAMES = {
    [0] = "reserved", [1] = "VERSION", [2] = "WINDOW_SCALE", [3] = "MAX_PACKET_SIZE",
    [4] = "CONTROLLER", [5] = "STARTUP_MODE", [6] = "SECURITY", [7] = "STREAM_CREDIT",
    [8] = "RETRY_TOKEN", [9] = "PADDING", [10] = "AEAD",
}
local REJECT_REASONS = {
    [0] = "unspecified", [1] = "version_unsupported", [2] = "busy",
    [3] = "controller_unsupported", [4] = "bad_parameters", [5] = "security_required",
    [6] = "refused", [7] = "retry", [8] = "aead_unsupported",
}
local CWIN_REASONS = {
    [0] = "unspecified", [1] = "handover_start", [2] = "handover_end",
    [3] = "buffer_pressure", [4] = "app_pause", [5] = "app_resume",
}
local RELIABILITY = {
    [0] = "reliable", [1] = "partial", [2] = "unreliable", [3] = "reliable_unordered",
}
local STARTUP_MODES = { [0] = "slow_start", [1] = "packet_pair" }
local SECURITY_MODES = {
    [2] = "Noise_IK", [3] = "Noise_XX", [4] = "Noise_IKpsk2", [5] = "Noise_NNpsk0",
}
local AEAD_NAMES = { [1] = "AES-128-GCM", [2] = "ChaCha20-Poly1305" }
local CN_NAMES = {
    [0] = "not ECN-capable", [1] = "ECN-capable (1)", [2] = "ECN-capable (0)",
    [3] = "congestion experienced",
}

local HEADER_LEN = 20
local TAG_LEN = 16

local f = sltp.fields
-- Base header (§2).
f.dest_id = ProtoField.uint16("sltp.dest_id", "DEST_ID", base.HEX)
f.src_id = ProtoField.uint16("sltp.src_id", "SRC_ID", base.HEX)
f.type = ProtoField.uint8("sltp.type", "PK_TYPE", base.DEC, TYPE_NAMES, 0xf0)
f.pri = ProtoField.uint8("sltp.pri", "PRI", base.DEC, nil, 0x0c)
f.cn = ProtoField.uint8("sltp.cn", "CN", base.DEC, CN_NAMES, 0x03)
f.flags = ProtoField.uint8("sltp.flags", "FLAGS", base.HEX)
f.flag_w_val = ProtoField.bool("sltp.flags.w_val", "W_VAL", 8, nil, 0x80)
f.flag_st_cks = ProtoField.bool("sltp.flags.st_cks", "ST_CKS", 8, nil, 0x40)
f.flag_st_rtr = ProtoField.bool("sltp.flags.st_rtr", "ST_RTR", 8, nil, 0x20)
f.flag_st_ret = ProtoField.bool("sltp.flags.st_ret", "ST_RET", 8, nil, 0x10)
f.flag_remote_reset = ProtoField.bool("sltp.flags.remote_reset", "REMOTE_RESET", 8, nil, 0x08)
f.flag_reply_req = ProtoField.bool("sltp.flags.reply_req", "REPLY_REQ", 8, nil, 0x04)
f.flag_reply = ProtoField.bool("sltp.flags.reply", "REPLY", 8, nil, 0x02)
f.flag_eom = ProtoField.bool("sltp.flags.eom", "EOM", 8, nil, 0x01)
f.chksum = ProtoField.uint16("sltp.chksum", "CHKSUM", base.HEX)
f.chksum_status = ProtoField.string("sltp.chksum.status", "Checksum status")
f.total_len = ProtoField.uint16("sltp.total_len", "TOTAL_LEN", base.DEC)
f.pblock = ProtoField.uint8("sltp.pblock", "PBLOCK", base.DEC)
f.tblock = ProtoField.uint8("sltp.tblock", "TBLOCK", base.DEC)
f.mess_seq_no = ProtoField.uint16("sltp.mess_seq_no", "MESS_SEQ_NO", base.DEC)
f.mess_acc_no = ProtoField.uint16("sltp.mess_acc_no", "MESS_ACC_NO", base.DEC)
f.sync_no = ProtoField.uint16("sltp.sync_no", "SYNC_NO", base.HEX)
f.window_size = ProtoField.uint32("sltp.window_size", "WINDOW_SIZE", base.DEC)
-- Payloads (§6).
f.pn = ProtoField.uint32("sltp.pn", "PACKET_NUMBER", base.DEC)
f.protected = ProtoField.bytes("sltp.protected", "Protected payload")
f.tag = ProtoField.bytes("sltp.tag", "Authentication tag")
f.tlv = ProtoField.none("sltp.tlv", "TLV")
f.tlv_type = ProtoField.uint8("sltp.tlv.type", "Type", base.DEC, TLV_NAMES)
f.tlv_len = ProtoField.uint16("sltp.tlv.len", "Length", base.DEC)
f.tlv_value = ProtoField.bytes("sltp.tlv.value", "Value")
f.tlv_version = ProtoField.uint16("sltp.tlv.version", "Version", base.DEC)
f.tlv_window_scale = ProtoField.uint8("sltp.tlv.window_scale", "Window scale", base.DEC)
f.tlv_max_packet_size = ProtoField.uint16("sltp.tlv.max_packet_size", "Max packet size", base.DEC)
f.tlv_controller = ProtoField.string("sltp.tlv.controller", "Controller")
f.tlv_startup_mode = ProtoField.uint8("sltp.tlv.startup_mode", "Start-up mode", base.DEC, STARTUP_MODES)
f.tlv_security_mode = ProtoField.uint8("sltp.tlv.security_mode", "Security mode", base.DEC, SECURITY_MODES)
f.tlv_noise_message = ProtoField.bytes("sltp.tlv.noise_message", "Noise message")
f.tlv_stream_credit = ProtoField.uint32("sltp.tlv.stream_credit", "Stream credit", base.DEC)
f.tlv_retry_token = ProtoField.bytes("sltp.tlv.retry_token", "Retry token")
f.tlv_padding = ProtoField.uint16("sltp.tlv.padding", "Padding bytes", base.DEC)
f.tlv_aead = ProtoField.uint8("sltp.tlv.aead", "AEAD", base.DEC, AEAD_NAMES)
f.reject_reason = ProtoField.uint8("sltp.reject.reason", "Reason", base.DEC, REJECT_REASONS)
f.frame = ProtoField.none("sltp.frame", "Stream frame")
f.frame_stream_id = ProtoField.uint16("sltp.frame.stream_id", "STREAM_ID", base.DEC)
f.frame_flags = ProtoField.uint8("sltp.frame.flags", "Frame flags", base.HEX)
f.frame_end = ProtoField.bool("sltp.frame.end", "E (end of message)", 8, nil, 0x80)
f.frame_reliability = ProtoField.uint8("sltp.frame.reliability", "R (reliability)", base.DEC, RELIABILITY, 0x60)
f.frame_reserved = ProtoField.uint8("sltp.frame.reserved", "Reserved", base.HEX, nil, 0x1f)
f.frame_message_no = ProtoField.uint32("sltp.frame.message_no", "MESSAGE_NO", base.DEC)
f.frame_block_index = ProtoField.uint16("sltp.frame.block_index", "BLOCK_INDEX", base.DEC)
f.frame_block_count = ProtoField.uint16("sltp.frame.block_count", "BLOCK_COUNT", base.DEC)
f.frame_skip = ProtoField.bool("sltp.frame.skip", "Skip frame (message abandoned)")
f.frame_length = ProtoField.uint16("sltp.frame.length", "LENGTH", base.DEC)
f.frame_data = ProtoField.bytes("sltp.frame.data", "DATA")
f.ack_largest = ProtoField.uint64("sltp.ack.largest", "LARGEST_ACKED", base.DEC)
f.ack_delay_us = ProtoField.uint32("sltp.ack.delay_us", "ACK_DELAY_US", base.DEC)
f.ack_range_count = ProtoField.uint8("sltp.ack.range_count", "RANGE_COUNT", base.DEC)
f.ack_first_range = ProtoField.uint32("sltp.ack.first_range", "FIRST_RANGE", base.DEC)
f.ack_gap = ProtoField.uint32("sltp.ack.gap", "GAP", base.DEC)
f.ack_length = ProtoField.uint32("sltp.ack.length", "LENGTH", base.DEC)
f.ack_acked = ProtoField.string("sltp.ack.acked", "Acknowledged")
f.credit_count = ProtoField.uint8("sltp.ack.credit_count", "CREDIT_COUNT", base.DEC)
f.credit_stream = ProtoField.uint16("sltp.ack.credit.stream_id", "STREAM_ID", base.DEC)
f.credit_max = ProtoField.uint32("sltp.ack.credit.max_message", "MAX_MESSAGE", base.DEC)
f.freq_seq = ProtoField.uint32("sltp.ack.freq.sequence", "SEQUENCE", base.DEC)
f.freq_threshold = ProtoField.uint16("sltp.ack.freq.threshold", "THRESHOLD", base.DEC)
f.freq_max_delay = ProtoField.uint32("sltp.ack.freq.max_ack_delay_us", "MAX_ACK_DELAY_US", base.DEC)
f.ecn_ect0 = ProtoField.uint64("sltp.ack.ecn.ect0", "ECT0", base.DEC)
f.ecn_ect1 = ProtoField.uint64("sltp.ack.ecn.ect1", "ECT1", base.DEC)
f.ecn_ce = ProtoField.uint64("sltp.ack.ecn.ce", "CE", base.DEC)
f.nack_range_count = ProtoField.uint8("sltp.nack.range_count", "RANGE_COUNT", base.DEC)
f.nack_block_count = ProtoField.uint8("sltp.nack.block_count", "BLOCK_COUNT", base.DEC)
f.nack_first = ProtoField.uint64("sltp.nack.first", "FIRST", base.DEC)
f.nack_count = ProtoField.uint32("sltp.nack.count", "COUNT", base.DEC)
f.nack_stream = ProtoField.uint16("sltp.nack.stream_id", "STREAM_ID", base.DEC)
f.nack_message = ProtoField.uint32("sltp.nack.message_no", "MESSAGE_NO", base.DEC)
f.nack_block = ProtoField.uint16("sltp.nack.block_index", "BLOCK_INDEX", base.DEC)
f.echo_probe_id = ProtoField.uint32("sltp.echo.probe_id", "PROBE_ID", base.HEX)
f.echo_timestamp = ProtoField.uint64("sltp.echo.timestamp_ns", "TIMESTAMP_NS", base.DEC)
f.echo_padding = ProtoField.uint32("sltp.echo.padding_len", "Padding bytes", base.DEC)
f.cwin_window = ProtoField.uint32("sltp.cwin.window_bytes", "WINDOW_BYTES", base.DEC)
f.cwin_reason = ProtoField.uint8("sltp.cwin.reason", "REASON", base.DEC, CWIN_REASONS)
f.group_id = ProtoField.uint32("sltp.group_id", "GROUP_ID", base.HEX)

local e_malformed = ProtoExpert.new("sltp.malformed", "Malformed SLTP payload",
    expert.group.MALFORMED, expert.severity.ERROR)
local e_checksum = ProtoExpert.new("sltp.bad_checksum", "Bad SLTP checksum",
    expert.group.CHECKSUM, expert.severity.ERROR)
sltp.experts = { e_malformed, e_checksum }

sltp.prefs.port = Pref.uint("UDP port", 4433, "UDP port decoded as SLTP (besides the heuristic)")

-- Per address pair: true once a START carrying SECURITY was seen.
local sealed_pairs = {}

local function pair_key(pinfo)
    local a = tostring(pinfo.src) .. ":" .. tostring(pinfo.src_port)
    local b = tostring(pinfo.dst) .. ":" .. tostring(pinfo.dst_port)
    if a < b then return a .. "|" .. b end
    return b .. "|" .. a
end

function sltp.init()
    sealed_pairs = {}
end

-- RFC 1071 over the datagram with bytes 6–7 counted as zero.
local function checksum(tvb, len)
    local sum = 0
    local i = 0
    while i + 1 < len do
        if i ~= 6 then sum = sum + tvb(i, 2):uint() end
        i = i + 2
    end
    if i < len then sum = sum + tvb(i, 1):uint() * 256 end
    while sum > 0xffff do sum = band(sum, 0xffff) + rshift(sum, 16) end
    return band(bnot(sum), 0xffff)
end

local function looks_like_sltp(tvb)
    local len = tvb:len()
    if len < HEADER_LEN then return false end
    local pk_type = rshift(tvb(4, 1):uint(), 4)
    if pk_type == 0 then return false end
    if tvb(8, 2):uint() ~= len then return false end
    if band(tvb(5, 1):uint(), 0x40) ~= 0 and checksum(tvb, len) ~= tvb(6, 2):uint() then
        return false
    end
    return true
end

-- A tree that keeps nothing: the dry run of a payload parser.
local NULL_TREE = {}
function NULL_TREE:add() return NULL_TREE end
function NULL_TREE:set_text() return NULL_TREE end

-- Each payload parser returns true when it consumed exactly `len` bytes
-- from `off` (the wire format forbids trailing bytes), false otherwise.

local function parse_tlvs(tvb, tree, off, stop, pinfo)
    local security = false
    while off < stop do
        if off + 3 > stop then return false, security end
        local t = tvb(off, 1):uint()
        local l = tvb(off + 1, 2):uint()
        if off + 3 + l > stop then return false, security end
        local name = TLV_NAMES[t] or ("unknown (" .. t .. ")")
        local sub = tree:add(f.tlv, tvb(off, 3 + l)):set_text("TLV " .. name .. ", " .. l .. " bytes")
        sub:add(f.tlv_type, tvb(off, 1))
        sub:add(f.tlv_len, tvb(off + 1, 2))
        local v = off + 3
        if t == 1 and l == 2 then
            sub:add(f.tlv_version, tvb(v, 2))
        elseif t == 2 and l == 1 then
            sub:add(f.tlv_window_scale, tvb(v, 1))
        elseif t == 3 and l == 2 then
            sub:add(f.tlv_max_packet_size, tvb(v, 2))
        elseif t == 4 and l >= 1 then
            sub:add(f.tlv_controller, tvb(v, l))
        elseif t == 5 and l == 1 then
            sub:add(f.tlv_startup_mode, tvb(v, 1))
        elseif t == 6 and l >= 1 then
            security = true
            sub:add(f.tlv_security_mode, tvb(v, 1))
            if l > 1 then sub:add(f.tlv_noise_message, tvb(v + 1, l - 1)) end
        elseif t == 7 and l == 4 then
            sub:add(f.tlv_stream_credit, tvb(v, 4))
        elseif t == 8 and l >= 1 then
            sub:add(f.tlv_retry_token, tvb(v, l))
        elseif t == 9 then
            sub:add(f.tlv_padding, tvb(off + 1, 2))
        elseif t == 10 and l >= 1 then
            for i = 0, l - 1 do sub:add(f.tlv_aead, tvb(v + i, 1)) end
        elseif l > 0 then
            sub:add(f.tlv_value, tvb(v, l))
        end
        off = v + l
    end
    return true, security
end

local function parse_data(tvb, tree, off, stop, info)
    local frames = 0
    while off < stop do
        if off + 13 > stop then return false end
        local length = tvb(off + 11, 2):uint()
        if off + 13 + length > stop then return false end
        local stream = tvb(off, 2):uint()
        local msg = tvb(off + 3, 4):uint()
        local index = tvb(off + 7, 2):uint()
        local count = tvb(off + 9, 2):uint()
        local bits = tvb(off + 2, 1):uint()
        local e = band(bits, 0x80) ~= 0
        if band(bits, 0x1f) ~= 0 then return false end
        if count == 0 then
            if index ~= 0 or length ~= 0 or e then return false end
        elseif index >= count or e ~= (index == count - 1) then
            return false
        end
        local text
        if count == 0 then
            text = string.format("Skip frame: stream %d, message %d", stream, msg)
        else
            text = string.format("Stream frame: stream %d, message %d, block %d/%d, %d bytes",
                stream, msg, index, count, length)
        end
        local sub = tree:add(f.frame, tvb(off, 13 + length)):set_text(text)
        sub:add(f.frame_stream_id, tvb(off, 2))
        local fl = sub:add(f.frame_flags, tvb(off + 2, 1))
        fl:add(f.frame_end, tvb(off + 2, 1))
        fl:add(f.frame_reliability, tvb(off + 2, 1))
        fl:add(f.frame_reserved, tvb(off + 2, 1))
        sub:add(f.frame_message_no, tvb(off + 3, 4))
        sub:add(f.frame_block_index, tvb(off + 7, 2))
        sub:add(f.frame_block_count, tvb(off + 9, 2))
        if count == 0 then sub:add(f.frame_skip, true) end
        sub:add(f.frame_length, tvb(off + 11, 2))
        if length > 0 then sub:add(f.frame_data, tvb(off + 13, length)) end
        off = off + 13 + length
        frames = frames + 1
    end
    table.insert(info, frames .. (frames == 1 and " frame" or " frames"))
    return frames > 0
end

local function parse_ack(tvb, tree, off, stop, info)
    if off + 17 > stop then return false end
    local largest = tvb(off, 8):uint64()
    tree:add(f.ack_largest, tvb(off, 8))
    tree:add(f.ack_delay_us, tvb(off + 8, 4))
    local count = tvb(off + 12, 1):uint()
    tree:add(f.ack_range_count, tvb(off + 12, 1))
    local first = tvb(off + 13, 4):uint()
    tree:add(f.ack_first_range, tvb(off + 13, 4))
    off = off + 17
    if off + 8 * count > stop then return false end
    -- Ranges in absolute packet numbers (UInt64 keeps 64-bit exactness).
    local hi = largest
    local lo = largest - first
    local acked = { tostring(lo) .. "-" .. tostring(hi) }
    for _ = 1, count do
        local gap = tvb(off, 4):uint()
        local length = tvb(off + 4, 4):uint()
        tree:add(f.ack_gap, tvb(off, 4))
        tree:add(f.ack_length, tvb(off + 4, 4))
        hi = lo - gap - 2
        lo = hi - length
        table.insert(acked, tostring(lo) .. "-" .. tostring(hi))
        off = off + 8
    end
    tree:add(f.ack_acked, table.concat(acked, ", "))
    table.insert(info, "acked " .. table.concat(acked, ","))
    if off == stop then return true end
    -- §6.5.1 credit section, then §6.5.2 ACK-frequency section.
    local credits = tvb(off, 1):uint()
    tree:add(f.credit_count, tvb(off, 1))
    off = off + 1
    if off + 6 * credits > stop then return false end
    for _ = 1, credits do
        local sub = tree:add(f.credit_stream, tvb(off, 2))
        sub:add(f.credit_max, tvb(off + 2, 4))
        off = off + 6
    end
    if off == stop then return credits > 0 end
    -- What follows the credits (§6.5.3): exactly 10 bytes are an
    -- ACK-frequency section alone; anything else starts with the ECN
    -- counts (three QUIC varints: the two high bits of the first byte give
    -- the length, 1/2/4/8 bytes), then at most a frequency section.
    if stop - off ~= 10 then
        local names = { f.ecn_ect0, f.ecn_ect1, f.ecn_ce }
        local ce
        for i = 1, 3 do
            if off >= stop then return false end
            local first = tvb(off, 1):uint()
            local len = 2 ^ math.floor(first / 64)
            if off + len > stop then return false end
            local v = UInt64(first % 64)
            for k = 1, len - 1 do
                v = v * 256 + tvb(off + k, 1):uint()
            end
            tree:add(names[i], tvb(off, len), v)
            ce = v
            off = off + len
        end
        table.insert(info, "ECN ce=" .. tostring(ce))
        if off == stop then return true end
    end
    if stop - off ~= 10 then return false end
    tree:add(f.freq_seq, tvb(off, 4))
    tree:add(f.freq_threshold, tvb(off + 4, 2))
    tree:add(f.freq_max_delay, tvb(off + 6, 4))
    return true
end

local function parse_nack(tvb, tree, off, stop, info)
    if off + 2 > stop then return false end
    local ranges = tvb(off, 1):uint()
    local blocks = tvb(off + 1, 1):uint()
    tree:add(f.nack_range_count, tvb(off, 1))
    tree:add(f.nack_block_count, tvb(off + 1, 1))
    off = off + 2
    if off + 12 * ranges + 8 * blocks ~= stop then return false end
    for _ = 1, ranges do
        local sub = tree:add(f.nack_first, tvb(off, 8))
        sub:add(f.nack_count, tvb(off + 8, 4))
        off = off + 12
    end
    for _ = 1, blocks do
        local sub = tree:add(f.nack_stream, tvb(off, 2))
        sub:add(f.nack_message, tvb(off + 2, 4))
        sub:add(f.nack_block, tvb(off + 6, 2))
        off = off + 8
    end
    table.insert(info, ranges .. " missing ranges, " .. blocks .. " missing blocks")
    return ranges + blocks > 0
end

-- Parses what follows the packet number of type `t` in plain form.
local function parse_after_pn(tvb, tree, t, off, stop, info)
    if t == 3 then
        return parse_data(tvb, tree, off, stop, info)
    elseif t == 4 then
        return parse_ack(tvb, tree, off, stop, info)
    elseif t == 5 then
        return parse_nack(tvb, tree, off, stop, info)
    elseif t == 8 or t == 9 or t == 10 then
        if off + 12 > stop then return false end
        tree:add(f.echo_probe_id, tvb(off, 4))
        tree:add(f.echo_timestamp, tvb(off + 4, 8))
        tree:add(f.echo_padding, stop - off - 12)
        return true
    elseif t == 13 then
        if off + 5 ~= stop then return false end
        tree:add(f.cwin_window, tvb(off, 4))
        tree:add(f.cwin_reason, tvb(off + 4, 1))
        table.insert(info, "window " .. tvb(off, 4):uint())
        return true
    elseif t == 14 or t == 15 then
        if off + 4 ~= stop then return false end
        tree:add(f.group_id, tvb(off, 4))
        table.insert(info, string.format("group 0x%08x", tvb(off, 4):uint()))
        return true
    else
        return off == stop -- END, FIN, STATUS, IDLE: the packet number only
    end
end

local function dissect(tvb, pinfo, root)
    local len = tvb:len()
    if len < HEADER_LEN then return 0 end
    pinfo.cols.protocol = "SLTP"
    local tree = root:add(sltp, tvb(0, len))
    local t = rshift(tvb(4, 1):uint(), 4)
    local flags = tvb(5, 1):uint()
    local hdr = tree:add(sltp, tvb(0, HEADER_LEN), "Base header")
    hdr:add(f.dest_id, tvb(0, 2))
    hdr:add(f.src_id, tvb(2, 2))
    hdr:add(f.type, tvb(4, 1))
    hdr:add(f.pri, tvb(4, 1))
    hdr:add(f.cn, tvb(4, 1))
    local fl = hdr:add(f.flags, tvb(5, 1))
    fl:add(f.flag_w_val, tvb(5, 1))
    fl:add(f.flag_st_cks, tvb(5, 1))
    fl:add(f.flag_st_rtr, tvb(5, 1))
    fl:add(f.flag_st_ret, tvb(5, 1))
    fl:add(f.flag_remote_reset, tvb(5, 1))
    fl:add(f.flag_reply_req, tvb(5, 1))
    fl:add(f.flag_reply, tvb(5, 1))
    fl:add(f.flag_eom, tvb(5, 1))
    local ck = hdr:add(f.chksum, tvb(6, 2))
    if band(flags, 0x40) ~= 0 then
        if checksum(tvb, len) == tvb(6, 2):uint() then
            ck:add(f.chksum_status, "good")
        else
            ck:add(f.chksum_status, "bad")
            ck:add_proto_expert_info(e_checksum)
        end
    end
    hdr:add(f.total_len, tvb(8, 2))
    hdr:add(f.pblock, tvb(10, 1))
    hdr:add(f.tblock, tvb(11, 1))
    hdr:add(f.mess_seq_no, tvb(12, 2))
    hdr:add(f.mess_acc_no, tvb(14, 2))
    hdr:add(f.sync_no, tvb(16, 2), rshift(tvb(16, 2):uint(), 4))
    hdr:add(f.window_size, tvb(17, 3), band(tvb(16, 4):uint(), 0xfffff))

    local names = {}
    for _, n in ipairs({ { 0x80, "W_VAL" }, { 0x40, "ST_CKS" }, { 0x20, "ST_RTR" },
        { 0x10, "ST_RET" }, { 0x08, "REMOTE_RESET" }, { 0x04, "REPLY_REQ" },
        { 0x02, "REPLY" }, { 0x01, "EOM" } }) do
        if band(flags, n[1]) ~= 0 then table.insert(names, n[2]) end
    end
    local info = { (TYPE_NAMES[t] or "?") .. " [" .. table.concat(names, ",") .. "]",
        string.format("%04x→%04x", tvb(2, 2):uint(), tvb(0, 2):uint()) }

    local ok = true
    local key = pair_key(pinfo)
    if t == 1 or t == 2 then
        local off = HEADER_LEN
        if t == 2 then
            if len < HEADER_LEN + 1 then
                ok = false
            else
                tree:add(f.reject_reason, tvb(off, 1))
                local r = tvb(off, 1):uint()
                table.insert(info, "reason " .. (REJECT_REASONS[r] or tostring(r)))
                off = off + 1
            end
        end
        if ok then
            local security
            ok, security = parse_tlvs(tvb, tree, off, len, pinfo)
            if security and t == 1 and not pinfo.visited then sealed_pairs[key] = true end
        end
    elseif len < HEADER_LEN + 4 then
        ok = false
    else
        tree:add(f.pn, tvb(HEADER_LEN, 4))
        table.insert(info, "PN=" .. tvb(HEADER_LEN, 4):uint())
        local off = HEADER_LEN + 4
        local sealed = sealed_pairs[key]
        if not sealed and len - off >= TAG_LEN then
            -- No handshake seen: plain if the plain layout parses exactly
            -- (a dry run into a tree that keeps nothing).
            sealed = not parse_after_pn(tvb, NULL_TREE, t, off, len, {})
        end
        if sealed then
            if len - off >= TAG_LEN then
                if len - off > TAG_LEN then tree:add(f.protected, tvb(off, len - off - TAG_LEN)) end
                tree:add(f.tag, tvb(len - TAG_LEN, TAG_LEN))
                table.insert(info, sealed_pairs[key] and "protected" or "protected (no handshake captured)")
            else
                ok = false
            end
        else
            ok = parse_after_pn(tvb, tree, t, off, len, info)
        end
    end
    if not ok then tree:add_proto_expert_info(e_malformed) end
    pinfo.cols.info = table.concat(info, " ")
    return len
end

function sltp.dissector(tvb, pinfo, root)
    return dissect(tvb, pinfo, root)
end

local function heuristic(tvb, pinfo, root)
    if not looks_like_sltp(tvb) then return false end
    dissect(tvb, pinfo, root)
    pinfo.conversation = sltp
    return true
end

sltp:register_heuristic("udp", heuristic)

local registered_port = nil
local function register_port()
    local udp = DissectorTable.get("udp.port")
    if registered_port then udp:remove(registered_port, sltp) end
    registered_port = sltp.prefs.port
    if registered_port ~= 0 then udp:add(registered_port, sltp) end
end
register_port()

function sltp.prefs_changed()
    register_port()
end
