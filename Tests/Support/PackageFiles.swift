import Foundation
import Testing

/// Files of this package that tests read by path: the root is the directory holding `Package.swift` above this
/// source file, so tests find `Config/` wherever the clone lives. Nothing outside the package is read
/// (`scripts/check-self-contained.sh` fails the build if a tracked file points there).
public enum PackageFiles {
    /// The package root (the clone's top directory).
    public static let root: String = {
        var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url.path
            }
            url.deleteLastPathComponent()
        }
        // Not reached in a checkout: this file sits in Tests/Support below Package.swift.
        return FileManager.default.currentDirectoryPath
    }()

    /// `Config/`: manifests, card profiles, TEST keys, the manifest schema.
    public static let configDirectory = root + "/Config"

    /// `Config/cards/`: the virtual card profiles.
    public static let cardsDirectory = configDirectory + "/cards"

    /// The absolute path of `relativePath` below the package root.
    public static func path(_ relativePath: String) -> String { root + "/" + relativePath }

    /// The bytes of the file at `relativePath` below the package root, such as `Config/keys/psp-test-public.pem`.
    /// - Throws: when the file cannot be read (the message names the path).
    public static func contents(of relativePath: String, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> [UInt8]
    {
        let path = path(relativePath)
        let data = try #require(
            FileManager.default.contents(atPath: path),
            "cannot read \(path)",
            sourceLocation: sourceLocation
        )
        return Array(data)
    }
}
