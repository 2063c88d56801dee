import JSON

/// The rows of a JSON export (Parse `_Installation`, SNS endpoints), each converted as it is read.
package struct JSONProviderRows: ProviderRows {
    private var scanner: JSONRowScanner
    private let convert: ([String: JSONValue]) -> (device: Result<JSONValue, DeviceLineParser.Refusal>, notes: [String])

    package init(
        scanner: JSONRowScanner,
        convert:
            @escaping ([String: JSONValue]) -> (device: Result<JSONValue, DeviceLineParser.Refusal>, notes: [String])
    ) {
        self.scanner = scanner
        self.convert = convert
    }

    package mutating func next() throws -> ProviderRow? {
        guard let (line, bytes, tooLong) = try scanner.next() else { return nil }
        if tooLong {
            return ProviderRow(
                line: line, device: .failure(.row("the row is longer than \(scanner.maxRowBytes) bytes", token: nil)))
        }
        guard
            let object = JSONValue.parse(bytes, limits: JSONLimits(maxDepth: 16, maxBytes: scanner.maxRowBytes))?
                .objectValue
        else {
            return ProviderRow(line: line, device: .failure(.row("the row is not a valid JSON object", token: nil)))
        }
        let (device, notes) = convert(object)
        return ProviderRow(line: line, device: device, notes: notes)
    }
}

/// The records of OneSignal's CSV export, each converted as it is read; the first record is the header.
package struct OneSignalRows: ProviderRows {
    private var reader: CSVReader
    private let options: ProviderImportOptions
    private var converter: OneSignalConverter?

    package init(reader: CSVReader, options: ProviderImportOptions) {
        self.reader = reader
        self.options = options
    }

    package mutating func next() throws -> ProviderRow? {
        if converter == nil {
            guard let header = try reader.next() else { throw ProviderFileError(description: "the file is empty") }
            guard case .success(let names) = header.fields else {
                throw ProviderFileError(description: "line 1: the CSV header cannot be read")
            }
            converter = try OneSignalConverter(header: names, options: options)
        }
        guard let converter, let record = try reader.next() else { return nil }
        switch record.fields {
        case .failure(let problem):
            return ProviderRow(
                line: record.line, device: .failure(.row("not RFC 4180 CSV: \(problem.reason)", token: nil)))
        case .success(let fields):
            if fields == [""] {
                return ProviderRow(line: record.line, device: .failure(.row("an empty line", token: nil)))
            }
            let (device, notes) = converter.convert(fields)
            return ProviderRow(line: record.line, device: device, notes: notes)
        }
    }
}

/// Counts the converters' notes as the rows pass (`ProviderRow.notes`) for the command's summary.
package struct NotedRows<Base: ProviderRows>: ProviderRows {
    package var base: Base
    private(set) var notes: [String: Int] = [:]

    package init(_ base: Base) { self.base = base }

    package mutating func next() throws -> ProviderRow? {
        guard let row = try base.next() else { return nil }
        if case .success = row.device { for note in Set(row.notes) { notes[note, default: 0] += 1 } }
        return row
    }
}
