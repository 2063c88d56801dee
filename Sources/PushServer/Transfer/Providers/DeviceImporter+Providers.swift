import JSON

extension DeviceImporter {
    /// Imports another provider's export read from `nextChunk`: its rows converted as they are read, then the same
    /// parser, caps and batches as a device file. Returns the report and the converters' notes counted per kind.
    /// - Throws: `ProviderFileError` for a file the converter cannot read on; what the store or reader threw.
    func run(
        from provider: Provider, options: ProviderImportOptions,
        nextChunk: @escaping () throws -> [UInt8]?
    ) async throws -> (DeviceImportReport, [String: Int]) {
        switch provider {
        case .parse:
            var rows = NotedRows(
                JSONProviderRows(
                    scanner: JSONRowScanner(nextChunk: nextChunk),
                    convert: ParseInstallationConverter.convert))
            return (try await run(converted: &rows), rows.notes)
        case .onesignal:
            var rows = NotedRows(OneSignalRows(reader: CSVReader(nextChunk: nextChunk), options: options))
            return (try await run(converted: &rows), rows.notes)
        case .sns:
            var rows = NotedRows(
                JSONProviderRows(scanner: JSONRowScanner(nextChunk: nextChunk)) {
                    SNSEndpointConverter.convert($0, options: options)
                })
            return (try await run(converted: &rows), rows.notes)
        }
    }
}
