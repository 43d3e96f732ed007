import BackupModel
import Foundation

/// `multipart/form-data` (RFC 7578) as `/v1/create` and `/v1/sync` take it: a `payload` part
/// (JSON) and a `backup` part (the sealed blob).
public enum Multipart {
    /// A form with the given parts in order; returns the body and its `Content-Type`.
    public static func encode(
        _ parts: [(name: String, filename: String?, contentType: String?, bytes: [UInt8])], boundary: String
    )
        -> (body: [UInt8], contentType: String)
    {
        var body: [UInt8] = []
        for part in parts {
            var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(part.name)\""
            if let filename = part.filename { head += "; filename=\"\(filename)\"" }
            head += "\r\n"
            if let type = part.contentType { head += "Content-Type: \(type)\r\n" }
            head += "\r\n"
            body += Array(head.utf8) + part.bytes + Array("\r\n".utf8)
        }
        body += Array("--\(boundary)--\r\n".utf8)
        return (body, "multipart/form-data; boundary=\(boundary)")
    }

    /// Why a body is not a form.
    public enum Failure: Error, Equatable {
        case notMultipart
        case malformed(String)
    }

    /// The parts of a form by name (a later part of the same name replaces an earlier one, as
    /// the service's field map does).
    public static func parse(contentType: String?, body: [UInt8]) -> Result<[String: [UInt8]], Failure> {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/form-data"),
            let range = contentType.range(of: "boundary=", options: .caseInsensitive)
        else { return .failure(.notMultipart) }
        var boundary = String(contentType[range.upperBound...].prefix { $0 != ";" })
        if boundary.hasPrefix("\""), boundary.hasSuffix("\""), boundary.count >= 2 {
            boundary = String(boundary.dropFirst().dropLast())
        }
        guard !boundary.isEmpty else { return .failure(.malformed("the boundary is empty")) }
        let delimiter = Array("--\(boundary)".utf8)
        guard var position = find(delimiter, in: body, from: 0) else {
            return .failure(.malformed("no part starts with the boundary"))
        }
        var fields: [String: [UInt8]] = [:]
        while true {
            position += delimiter.count
            if body.count >= position + 2, body[position] == 0x2d, body[position + 1] == 0x2d {
                return .success(fields)
            }
            guard body.count >= position + 2, body[position] == 0x0d, body[position + 1] == 0x0a else {
                return .failure(.malformed("a boundary is not followed by a line break"))
            }
            position += 2
            guard let headersEnd = find(Array("\r\n\r\n".utf8), in: body, from: position) else {
                return .failure(.malformed("a part has no end of headers"))
            }
            let headers = String(decoding: body[position..<headersEnd], as: UTF8.self)
            let contentStart = headersEnd + 4
            guard let next = find(Array("\r\n".utf8) + delimiter, in: body, from: contentStart) else {
                return .failure(.malformed("a part is not closed by the boundary"))
            }
            if let name = fieldName(headers) { fields[name] = Array(body[contentStart..<next]) }
            position = next + 2
        }
    }

    static func fieldName(_ headers: String) -> String? {
        for line in headers.split(separator: "\r\n") where line.lowercased().hasPrefix("content-disposition:") {
            guard let range = line.range(of: "name=\"") else { continue }
            let rest = line[range.upperBound...]
            return String(rest.prefix { $0 != "\"" })
        }
        return nil
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        var index = start
        let first = needle[0]
        while index + needle.count <= haystack.count {
            if haystack[index] == first, haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
