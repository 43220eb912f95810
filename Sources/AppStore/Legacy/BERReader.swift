/// A minimal, bounds-checked BER reader for App Store receipts (PKCS#7, often with indefinite lengths and
/// constructed OCTET STRINGs). Never trusts a length: every read is checked against the input, nesting is
/// capped, and garbage is reported with its offset.
struct BERNode {
    /// Tag class (0 universal, 1 application, 2 context-specific, 3 private).
    let tagClass: UInt8
    let constructed: Bool
    let tagNumber: UInt64
    /// The content octets (primitive), or the children (constructed).
    let content: ArraySlice<UInt8>
    let children: [BERNode]
    /// Offset of the node in the input, for messages.
    let offset: Int

    static let maximumDepth = 32

    static let universalInteger: UInt64 = 2
    static let universalOctetString: UInt64 = 4
    static let universalObjectIdentifier: UInt64 = 6
    static let universalUTF8String: UInt64 = 12
    static let universalSequence: UInt64 = 16
    static let universalSet: UInt64 = 17
    static let universalIA5String: UInt64 = 22

    func isUniversal(_ number: UInt64) -> Bool { tagClass == 0 && tagNumber == number }
    func isContext(_ number: UInt64) -> Bool { tagClass == 2 && tagNumber == number }

    /// Parses exactly one node spanning all of `bytes`.
    static func parse(_ bytes: ArraySlice<UInt8>) throws(BERError) -> BERNode {
        var reader = Reader(bytes: bytes)
        let node = try reader.node(depth: 0)
        guard reader.position == bytes.endIndex else {
            throw BERError(offset: reader.position - bytes.startIndex, problem: "trailing bytes after the value")
        }
        return node
    }

    /// Parses the content of this node as a sequence of nodes (the inside of an OCTET STRING).
    func parseContent() throws(BERError) -> BERNode { try BERNode.parse(octets()) }

    /// An OCTET STRING's bytes; a constructed one (BER chunks) is concatenated.
    func octets() throws(BERError) -> ArraySlice<UInt8> {
        guard constructed else { return content }
        var joined: [UInt8] = []
        for child in children {
            guard child.isUniversal(BERNode.universalOctetString) else {
                throw BERError(offset: child.offset, problem: "a constructed OCTET STRING holds something else")
            }
            joined += try child.octets()
        }
        return joined[...]
    }

    /// A non-negative INTEGER that fits in Int64.
    func integer() throws(BERError) -> Int64 {
        guard isUniversal(BERNode.universalInteger), !constructed, !content.isEmpty, content.count <= 8 else {
            throw BERError(offset: offset, problem: "expected a small INTEGER")
        }
        var value: Int64 = content.first.map { $0 & 0x80 != 0 ? -1 : 0 } ?? 0
        for byte in content { value = (value << 8) | Int64(byte) }
        return value
    }

    /// A UTF8String or IA5String as text.
    func text() throws(BERError) -> String {
        guard isUniversal(BERNode.universalUTF8String) || isUniversal(BERNode.universalIA5String) else {
            throw BERError(offset: offset, problem: "expected a UTF8String or IA5String")
        }
        return String(decoding: try octets(), as: UTF8.self)
    }

    /// An OBJECT IDENTIFIER in dotted form.
    func objectIdentifier() throws(BERError) -> String {
        guard isUniversal(BERNode.universalObjectIdentifier), !constructed, !content.isEmpty else {
            throw BERError(offset: offset, problem: "expected an OBJECT IDENTIFIER")
        }
        var arcs: [UInt64] = []
        var value: UInt64 = 0
        for byte in content {
            guard value < (1 << 56) else { throw BERError(offset: offset, problem: "OBJECT IDENTIFIER arc too large") }
            value = (value << 7) | UInt64(byte & 0x7F)
            if byte & 0x80 == 0 {
                if arcs.isEmpty {
                    arcs += value < 80 ? [value / 40, value % 40] : [2, value - 80]
                } else {
                    arcs.append(value)
                }
                value = 0
            }
        }
        return arcs.map(String.init).joined(separator: ".")
    }

    private struct Reader {
        let bytes: ArraySlice<UInt8>
        var position: Int

        init(bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            position = bytes.startIndex
        }

        mutating func byte() throws(BERError) -> UInt8 {
            guard position < bytes.endIndex else { throw BERError(offset: position - bytes.startIndex, problem: "unexpected end of data") }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func node(depth: Int) throws(BERError) -> BERNode {
            guard depth < BERNode.maximumDepth else {
                throw BERError(offset: position - bytes.startIndex, problem: "nested more than \(BERNode.maximumDepth) levels")
            }
            let start = position
            let identifier = try byte()
            let tagClass = identifier >> 6
            let constructed = identifier & 0x20 != 0
            var tagNumber = UInt64(identifier & 0x1F)
            if tagNumber == 0x1F {
                tagNumber = 0
                while true {
                    let next = try byte()
                    guard tagNumber < (1 << 56) else { throw BERError(offset: start - bytes.startIndex, problem: "tag number too large") }
                    tagNumber = (tagNumber << 7) | UInt64(next & 0x7F)
                    if next & 0x80 == 0 { break }
                }
            }
            let first = try byte()
            if first == 0x80 {
                // Indefinite length: children until an end-of-contents marker (00 00).
                guard constructed else {
                    throw BERError(offset: start - bytes.startIndex, problem: "indefinite length on a primitive value")
                }
                var children: [BERNode] = []
                while true {
                    guard position + 1 < bytes.endIndex else {
                        throw BERError(offset: position - bytes.startIndex, problem: "missing end-of-contents")
                    }
                    if bytes[position] == 0, bytes[position + 1] == 0 {
                        position += 2
                        break
                    }
                    children.append(try node(depth: depth + 1))
                }
                return BERNode(
                    tagClass: tagClass, constructed: true, tagNumber: tagNumber, content: bytes[start..<start],
                    children: children, offset: start - bytes.startIndex)
            }
            var length = 0
            if first & 0x80 == 0 {
                length = Int(first)
            } else {
                let count = Int(first & 0x7F)
                guard count <= 4 else { throw BERError(offset: start - bytes.startIndex, problem: "length field too long") }
                for _ in 0..<count { length = (length << 8) | Int(try byte()) }
            }
            guard length <= bytes.endIndex - position else {
                throw BERError(offset: start - bytes.startIndex, problem: "length \(length) runs past the end of the data")
            }
            let content = bytes[position..<(position + length)]
            position += length
            var children: [BERNode] = []
            if constructed {
                var inner = Reader(bytes: content)
                while inner.position < content.endIndex { children.append(try inner.node(depth: depth + 1)) }
            }
            return BERNode(
                tagClass: tagClass, constructed: constructed, tagNumber: tagNumber, content: content, children: children,
                offset: start - bytes.startIndex)
        }
    }
}

/// Where and why BER data could not be read.
struct BERError: Error {
    let offset: Int
    let problem: String
}
