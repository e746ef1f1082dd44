import ProximaCore
import ProximaCrypto
package import ProximaKernel
internal import ProximaSystem

#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// The ID verification settings of a manifest: `capabilities.mobileDocument`, checked strictly (unknown keys are
/// errors naming their JSON path). Every key and certificate is loaded once, here, when the manifest loads; a
/// missing or unusable file names its path and the JSON path that pointed to it.
///
/// ```json
/// "mobileDocument": {
///   "trustAnchors": ["keys/mdl-iaca-test.pem"],
///   "vical": "keys/vical.cbor",
///   "readerAuthentication": { "privateKey": "keys/mdl-reader-test-private.pem",
///                             "certificateChain": ["keys/mdl-reader-test.pem"] },
///   "clockSkewSeconds": 300
/// }
/// ```
///
/// - `trustAnchors` (required unless `vical` is given; IACAs for any docType): IACA certificates, each entry a PEM file (one or more
///   certificates) or a folder whose `*.pem`, `*.crt` and `*.cer` files are read, resolved against the manifest's
///   folder.
/// - `vical` (optional): an ISO/IEC 18013-5 Annex C / AAMVA VICAL file (COSE_Sign1-signed list of IACA
///   certificates), verified once here (``VICAL/verify(_:signerAnchors:now:clockSkewSeconds:)``): its signature
///   with the x5chain signer, the signer's chain to `vicalTrustAnchors`, nextUpdate, every entry. Its IACAs then
///   anchor document signers like `trustAnchors`, each only for the docTypes its entry lists. A refused VICAL is
///   a manifest error at this key naming the check (``VICALError``), and for an entry its index.
/// - `vicalTrustAnchors` (required with `vical`, a Proxima key): the CA certificate(s) the VICAL signer must chain
///   to, as `trustAnchors` (files or folders); a self-signed signer certificate may be listed itself.
/// - `readerAuthentication` (optional): the reader's private key (PEM, PKCS#8 or SEC1) and its certificate chain
///   (PEM files, the reader's own certificate first, whose key must be the private key's). With it every
///   DeviceRequest carries readerAuth (ISO/IEC 18013-5 §9.1.4).
/// - `clockSkewSeconds` (default 300, 0…86400): tolerance on the MSO's validFrom and validUntil.
/// - `readerToken` (optional): how reader tokens of `MobileDocumentReaderSession` are verified: `publicKey` (the
///   server's P-256 key, PEM), `issuer` (`iss`) and `readerIdentifier` (the `aud` the token names; the reader
///   instance identifier). Without it tokens are verified with `capabilities.payment`'s processor key, issuer and
///   reader identifier, as payment tokens are.
package struct MobileDocumentSettings: Sendable {
    /// The manifest key of these settings under `capabilities`.
    package static let capabilityID: CapabilityID = "mobileDocument"
    /// Largest key, certificate or VICAL file read.
    static let fileLimit = 1 << 20

    /// The anchor files read, absolute, in order.
    package var trustAnchorFiles: [String]
    package var trust: MdocTrust
    /// The verified VICAL, when `vical` is given.
    package var vical: VICAL?
    /// The `vicalTrustAnchors` files read, absolute, in order.
    package var vicalSignerAnchorFiles: [String] = []
    package var readerAuthentication: ReaderAuthenticationKey?
    package var clockSkewSeconds: Int64
    /// The `readerToken` block's rules, if the manifest has one.
    package var readerToken: ReaderTokenCheck?
    /// The reader instance identifier of `readerToken`, if given.
    package var readerIdentifier: String?

    /// Reads and checks the settings object found at `path`.
    ///
    /// - Parameters:
    ///   - json: The `capabilities.mobileDocument` object.
    ///   - path: Its JSON path, for messages.
    ///   - baseDirectory: The manifest's folder; file paths resolve against it.
    /// - Throws: `ProximaError.invalidManifest` whose `jsonPath` names the problem.
    package init(
        json: JSONValue,
        path: String,
        baseDirectory: String,
        now: Int64 = Int64(Date().timeIntervalSince1970)
    ) throws {
        var object = try StrictObject(json, at: path)
        func resolve(_ file: String) -> String { PathResolution.resolve(file, against: baseDirectory) }

        let anchorsPath = object.path(of: "trustAnchors")
        var files: [String] = []
        var anchors: [X509Certificate] = []
        if object.has("trustAnchors") || !object.has("vical") {
            (files, anchors) = try Self.anchors(in: &object, key: "trustAnchors", resolve: resolve)
        }
        trustAnchorFiles = files
        clockSkewSeconds = try object.optionalInteger("clockSkewSeconds", in: 0...86_400) ?? 300
        let vicalPath = object.path(of: "vical")
        if let vicalEntry = try object.optionalString("vical") {
            guard object.has("vicalTrustAnchors") else {
                throw ProximaError(
                    .invalidManifest,
                    "a VICAL is trusted through its signer: add vicalTrustAnchors, the VICAL provider's CA "
                        + "certificate(s) its signer must chain to",
                    jsonPath: object.path(of: "vicalTrustAnchors")
                )
            }
            let (signerFiles, signerAnchors) = try Self.anchors(in: &object, key: "vicalTrustAnchors", resolve: resolve)
            vicalSignerAnchorFiles = signerFiles
            let file = resolve(vicalEntry)
            let bytes: [UInt8]
            do {
                bytes = try SystemFile.read(file, limit: VICAL.maximumSize)
            } catch {
                throw ProximaError(
                    .invalidManifest,
                    "cannot read \(file): \(error.reason)",
                    jsonPath: vicalPath,
                    underlying: error
                )
            }
            do {
                vical = try VICAL.verify(
                    bytes,
                    signerAnchors: try X509TrustStore(anchors: signerAnchors),
                    now: now,
                    clockSkewSeconds: clockSkewSeconds
                )
            } catch let error as VICALError {
                throw ProximaError(
                    .invalidManifest,
                    "\(file) refused: \(error.code): \(error.reason)",
                    jsonPath: vicalPath,
                    underlying: error
                )
            } catch {
                throw ProximaError(.invalidManifest, "\(file): \(error)", jsonPath: vicalPath, underlying: error)
            }
        } else if object.has("vicalTrustAnchors") {
            throw object.fail("vicalTrustAnchors", "vicalTrustAnchors without vical: name the VICAL file too")
        }
        do {
            trust = try MdocTrust(anchors: anchors, vical: vical, clockSkewSeconds: clockSkewSeconds)
        } catch {
            throw ProximaError(
                .invalidManifest,
                "the IACA certificates could not be put in a trust store: \(error)",
                jsonPath: anchorsPath,
                underlying: error
            )
        }

        if let value = object.value("readerAuthentication") {
            readerAuthentication = try Self.readerAuthentication(
                value,
                at: object.path(of: "readerAuthentication"),
                resolve: resolve
            )
        }
        if let value = object.value("readerToken") {
            var token = try StrictObject(value, at: object.path(of: "readerToken"))
            let keyPath = token.path(of: "publicKey")
            let keyFile = resolve(try token.string("publicKey"))
            let key: P256.PublicKey
            do {
                key = try P256.PublicKey(pemRepresentation: try Self.text(of: keyFile, at: keyPath))
            } catch let error as ProximaError {
                throw error
            } catch {
                throw ProximaError(
                    .invalidManifest,
                    "\(keyFile) is not a P-256 public key in PEM (BEGIN PUBLIC KEY)",
                    jsonPath: keyPath,
                    underlying: error
                )
            }
            let issuer = try token.string("issuer")
            let identifier = try token.string("readerIdentifier")
            try token.finish()
            readerToken = ReaderTokenCheck(publicKey: key, issuer: issuer, acceptedAudiences: [identifier])
            readerIdentifier = identifier
        }
        try object.finish()
    }

    /// The settings of `manifest`.
    /// - Throws: ``MobileDocumentServiceError/Code/notAllowed`` when the manifest has no valid
    ///   `capabilities.mobileDocument` block.
    package init(manifest: Manifest) throws(MobileDocumentServiceError) {
        let file = manifest.sourcePath ?? "the manifest"
        guard let json = manifest.capabilities[Self.capabilityID] else {
            throw MobileDocumentServiceError(
                .notAllowed,
                "\(file) has no capabilities.mobileDocument block: add trustAnchors (the IACA certificates)"
            )
        }
        do {
            try self.init(json: json, path: "capabilities.mobileDocument", baseDirectory: manifest.baseDirectory)
        } catch let error as ProximaError {
            throw MobileDocumentServiceError(.notAllowed, "\(file): \(error.pathAndReason)", underlying: error)
        } catch {
            throw MobileDocumentServiceError(.notAllowed, "\(file): \(error)", underlying: error)
        }
    }

    /// The capability type the built-in registry holds, whose validator is this initialiser.
    package static let capabilityType = CapabilityType(
        id: capabilityID,
        summary: "ISO/IEC 18013-5 mDL reader: IACA trust anchors, reader authentication, clock skew"
    ) { settings, path, baseDirectory in
        _ = try MobileDocumentSettings(json: settings, path: path, baseDirectory: baseDirectory)
    }

    // MARK: Files

    /// The certificate files and certificates of the array `key` (PEM files or folders), at least one entry.
    static func anchors(
        in object: inout StrictObject,
        key: String,
        resolve: (String) -> String
    ) throws -> ([String], [X509Certificate]) {
        let decoder = object
        let arrayPath = object.path(of: key)
        let entries = try object.array(key) { value, elementPath in
            (try decoder.decodeString(value, at: elementPath), elementPath)
        }
        guard !entries.isEmpty else {
            throw ProximaError(
                .invalidManifest,
                "expected at least one certificate file or folder",
                jsonPath: arrayPath
            )
        }
        var files: [String] = []
        var certificates: [X509Certificate] = []
        for (entry, entryPath) in entries {
            for file in try anchorFiles(resolve(entry), at: entryPath) {
                certificates += try Self.certificates(in: file, at: entryPath)
                files.append(file)
            }
        }
        return (files, certificates)
    }

    /// `path` itself, or the certificate files of the folder at `path`.
    static func anchorFiles(_ path: String, at jsonPath: String) throws -> [String] {
        let status: FileStatus
        do {
            status = try FileStatus.of(path)
        } catch {
            throw ProximaError(.invalidManifest, "cannot read \(path): \(error)", jsonPath: jsonPath)
        }
        guard status.isDirectory else { return [path] }
        let names: [String]
        do {
            names = try SystemFile.directoryEntries(path)
        } catch {
            throw ProximaError(.invalidManifest, "cannot list \(path): \(error.reason)", jsonPath: jsonPath)
        }
        let files = names.filter { name in [".pem", ".crt", ".cer"].contains { name.hasSuffix($0) } }
            .map { path.hasSuffix("/") ? path + $0 : path + "/" + $0 }
        guard !files.isEmpty else {
            throw ProximaError(
                .invalidManifest,
                "the folder \(path) holds no .pem, .crt or .cer file",
                jsonPath: jsonPath
            )
        }
        return files
    }

    static func text(of path: String, at jsonPath: String) throws -> String {
        do {
            return String(decoding: try SystemFile.read(path, limit: fileLimit), as: UTF8.self)
        } catch {
            throw ProximaError(
                .invalidManifest,
                "cannot read \(path): \(error.reason)",
                jsonPath: jsonPath,
                underlying: error
            )
        }
    }

    /// The PEM certificates of `path`, at least one.
    static func certificates(in path: String, at jsonPath: String) throws -> [X509Certificate] {
        let text = try text(of: path, at: jsonPath)
        let certificates: [X509Certificate]
        do {
            certificates = try X509Certificate.certificates(pemRepresentation: text)
        } catch {
            throw ProximaError(
                .invalidManifest,
                "\(path) is not PEM certificates (BEGIN CERTIFICATE): \(error)",
                jsonPath: jsonPath,
                underlying: error
            )
        }
        guard !certificates.isEmpty else {
            throw ProximaError(.invalidManifest, "\(path) holds no PEM certificate", jsonPath: jsonPath)
        }
        return certificates
    }

    static func readerAuthentication(
        _ json: JSONValue,
        at path: String,
        resolve: (String) -> String
    ) throws -> ReaderAuthenticationKey {
        var object = try StrictObject(json, at: path)
        let decoder = object
        let keyPath = object.path(of: "privateKey")
        let keyFile = resolve(try object.string("privateKey"))
        let key: ECPrivateKey
        do {
            key = try ECPrivateKey(pemRepresentation: try text(of: keyFile, at: keyPath))
        } catch let error as ProximaError {
            throw error
        } catch {
            throw ProximaError(
                .invalidManifest,
                "\(keyFile) is not an EC private key in PEM (P-256, P-384 or P-521)",
                jsonPath: keyPath,
                underlying: error
            )
        }
        let chainPath = object.path(of: "certificateChain")
        let files = try object.array("certificateChain") { value, elementPath in
            (resolve(try decoder.decodeString(value, at: elementPath)), elementPath)
        }
        guard !files.isEmpty else {
            throw ProximaError(
                .invalidManifest,
                "expected the reader certificate (and its issuers), first the reader's",
                jsonPath: chainPath
            )
        }
        var chain: [X509Certificate] = []
        for (file, elementPath) in files { chain += try certificates(in: file, at: elementPath) }
        guard chain[0].publicKey == key.publicKey else {
            throw ProximaError(
                .invalidManifest,
                "the first certificate of \(files[0].0) is not the certificate of \(keyFile)'s key",
                jsonPath: "\(chainPath)[0]"
            )
        }
        try object.finish()
        return ReaderAuthenticationKey(privateKey: key, certificateChain: chain.map(\.derRepresentation))
    }
}
