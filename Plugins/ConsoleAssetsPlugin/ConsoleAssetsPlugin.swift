// SPDX-License-Identifier: Apache-2.0
import Foundation
import PackagePlugin

/// Generates `ConsoleAssets.swift` for the PushServer target from the page files in `console/` at build time, so the
/// files stay the one copy in the repository and the binary still carries them (nothing is read from disk at run
/// time). The build reruns the generator when one of the files changes.
@main
struct ConsoleAssetsPlugin: BuildToolPlugin {
    /// The embedded files: the Swift name of each asset, its file under `console/` and its exact content type (the
    /// page is served with `nosniff`). `text` files become string literals, the others byte arrays.
    private static let assets: [(kind: String, name: String, file: String, contentType: String)] = [
        ("text", "index", "index.html", "text/html; charset=utf-8"),
        ("text", "script", "app.js", "text/javascript; charset=utf-8"),
        ("text", "styles", "app.css", "text/css; charset=utf-8"),
        ("bytes", "favicon", "favicon.ico", "image/x-icon"),
    ]

    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let console = context.package.directoryURL.appending(path: "console")
        let output = context.pluginWorkDirectoryURL.appending(path: "ConsoleAssets.swift")
        var arguments = [output.path]
        for asset in Self.assets {
            arguments += [asset.kind, asset.name, console.appending(path: asset.file).path, asset.contentType]
        }
        return [
            .buildCommand(
                displayName: "Generating ConsoleAssets.swift from the console folder",
                executable: try context.tool(named: "ConsoleAssetsGenerator").url,
                arguments: arguments,
                inputFiles: Self.assets.map { console.appending(path: $0.file) },
                outputFiles: [output])
        ]
    }
}
