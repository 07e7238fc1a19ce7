import Config

/// Addresses of the web page's views (docs/web.md) under its public URL, for links from elsewhere (Home Assistant's
/// "Visit" link on a device). The page routes by the URL's fragment, so a link needs no server round trip.
package enum WebLinks {
    package static func device(_ name: String, at url: PublicURL) -> String {
        "\(url.text)/#/device/\(percentEncoded(name))"
    }

    /// A name may hold any character a person typed (or a radio sent); in a link only RFC 3986's unreserved ones
    /// stay as they are.
    package static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 0xF)])
            }
        }
        return out
    }
}
