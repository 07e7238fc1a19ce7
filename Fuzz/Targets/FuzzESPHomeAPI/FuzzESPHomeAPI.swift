import FuzzSupport
@testable import ESPHomeAPI

/// What a Home Assistant Bluetooth proxy client sends before anyone trusts it (docs/dev/esphome-proxy.md): its bytes
/// cut into frames at arbitrary points, its first Noise handshake message, and forged transport messages.
/// Oracles: however the bytes are split, the frames read are the same, each payload within the bound, and nothing
/// is kept beyond what arrived; a handshake message either fails or, only with the right key, authenticates; a
/// forged transport message never opens and leaves the nonce counter where it was. And a message payload of any type
/// (the type from two bytes): it decodes or is refused without trapping, and what decodes comes back unchanged from
/// its own encoding. And a whole connection fed the bytes in pieces, plaintext and with a key: nothing passes the
/// handshake without the key, nothing is read after a close, nothing beyond a frame is kept.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzESPHomeAPI(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let rest = input.take(size)
    switch mode % 4 {
    case 0:
        var whole = APIFrameReader()
        let wholeResult = Result { () throws(APIFrameReader.Failure) in try whole.read(rest) }
        var pieces = APIFrameReader()
        var frames: [APIFrameReader.Frame] = []
        var failure: APIFrameReader.Failure?
        var index = 0
        let step = Int(mode / 4) + 1
        while index < rest.count, failure == nil {
            let end = min(index + step, rest.count)
            do throws(APIFrameReader.Failure) {
                frames += try pieces.read(rest[index..<end])
            } catch {
                failure = error
            }
            index = end
        }
        switch wholeResult {
        case .success(let all):
            require(failure == nil && frames == all, "split reading differs from whole reading")
            require(whole.pending <= rest.count, "kept more than arrived")
            for frame in all {
                if case .message(_, let payload) = frame {
                    require(payload.count <= APIFrameReader.maxPayload, "payload over the bound")
                }
            }
        case .failure(let error):
            require(failure == error, "split reading fails differently: \(String(describing: failure)) vs \(error)")
        }
    case 1:
        var responder = NoiseHandshake(role: .responder, psk: [UInt8](repeating: 0x5A, count: 32),
                                       prologue: Array("NoiseAPIInit\0\0".utf8), ephemeral: [UInt8](repeating: 7, count: 32))
        if (try? responder.readMessage(rest)) != nil {
            // Forging the first message needs the key: a fuzzer that finds one has found a bug.
            require(false, "a message not made with the key authenticated")
        }
    case 2:
        let psk = [UInt8](repeating: 0x33, count: 32)
        var initiator = NoiseHandshake(role: .initiator, psk: psk, prologue: [], ephemeral: [UInt8](repeating: 1, count: 32))
        var responder = NoiseHandshake(role: .responder, psk: psk, prologue: [], ephemeral: [UInt8](repeating: 2, count: 32))
        guard let first = try? initiator.writeMessage(), (try? responder.readMessage(first)) != nil,
              let second = try? responder.writeMessage(), (try? initiator.readMessage(second)) != nil,
              var send = initiator.transport?.send, var receive = responder.transport?.receive else {
            require(false, "the handshake with the right key failed")
            return 0
        }
        let genuine = send.seal(Array(rest.prefix(8)))
        if rest != genuine {
            require(receive.open(rest) == nil, "a forged transport message opened")
            require(receive.counter == 0, "a failed open moved the counter")
        }
        require(receive.open(genuine) == Array(rest.prefix(8)), "the genuine message did not open after forgeries")
    case 3 where (mode / 4) % 2 == 1:
        // A whole connection (frames, the handshake, the session) fed what a hostile client sends, in pieces.
        let identity = APIConnection.Identity(name: "fuzz", macAddress: "00:00:00:00:00:01")
        for security in [APIConnection.Security.plaintext, .noise(psk: [UInt8](repeating: 0x5A, count: 32))] {
            var connection = APIConnection(security: security, identity: identity,
                                           ephemeral: [UInt8](repeating: 7, count: 32))
            var session = APISession(identity: APISession.Identity(name: "fuzz", serverInfo: "fuzz",
                                                                   deviceInfo: APIMessage.DeviceInfo()))
            var closed = false
            var index = 0
            let step = Int(mode / 8) + 1
            while index < rest.count {
                let end = min(index + step, rest.count)
                let output = connection.receive(rest[index..<end])
                require(!closed || output == APIConnection.Output(), "a closed connection went on")
                if case .noise = security {
                    // Only the key opens the session: nothing made without it is ever a message.
                    require(output.messages.isEmpty, "a message came through a handshake made without the key")
                }
                require(connection.pendingBytes <= APIFrameReader.maxPayload + 16, "kept more than a frame")
                for message in output.messages {
                    if let decoded = APIMessage.decode(type: UInt16(clamping: message.type), payload: message.payload) {
                        _ = session.receive(decoded, status: APISession.Status())
                    }
                }
                closed = closed || output.closing != nil
                index = end
            }
        }
    default:
        let type = UInt16(rest.first ?? 0) << 8 | UInt16(rest.dropFirst().first ?? 0)
        if let message = APIMessage.decode(type: type, payload: Array(rest.dropFirst(2))) {
            let encoded = message.encoded()
            require(encoded.type == type, "a message encodes under another type")
            if case .unknown = message {} else {
                require(APIMessage.decode(type: type, payload: encoded.payload) == message,
                        "a decoded message does not come back from its own encoding")
            }
        }
    }
    return 0
}

@_cdecl("FuzzESPHomeAPI_main")
public func fuzzESPHomeAPIMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzESPHomeAPI(data, size) })
}
