import Foundation
import Proxima
import ProximaProcessorSandbox
import ProximaCore
import ProximaKernel
import ProximaSystem

/// `proxima psp`: the payment processor's side, as a sandbox for integrators.
enum PSPCommand {
    static let defaultMerchant = "merchant-test-001"

    static let help = """
        USAGE: proxima psp keygen [--out DIR]
               proxima psp token [--config FILE] [--key FILE] [--merchant ID] [--audience A]... [--lifetime S]
               proxima psp decrypt [--config FILE] [--key FILE] [--reveal] [ENVELOPE | -]

        A sandbox of the payment processor's side, for integrators.

          keygen   Makes a P-256 processor key pair: psp-private.pem and psp-public.pem in DIR (default .).
                   Put the public key's path in the manifest's capabilities.payment.processorPublicKey.
          token    Issues a reader token (JWT, ES256) for this kernel: iss and the merchant claim from the
                   manifest's payment settings, aud = its readerIdentifier (or --audience), signed with the
                   private key (default: the manifest's test key, keys/psp-test-private.pem).
          decrypt  Opens a paymentCardData envelope (argument, or stdin with -) with the private key and prints
                   the transaction and the EMV tags. The PAN shows as its last four digits and track data as
                   a length unless --reveal is given.
        """

    static func run(_ words: [String]) async throws -> ExitCode {
        let args = try Arguments(
            words,
            valued: ["config", "key", "merchant", "audience", "lifetime", "out"],
            flags: ["help", "reveal"]
        )
        if args.flag("help") || args.positionals.isEmpty {
            print(help)
            return args.flag("help") ? .success : .usage
        }
        switch args.positionals[0] {
        case "keygen":
            let directory = args.value("out") ?? "."
            let pair = try ProcessorKeyPair.generate()
            let privatePath = PathResolution.resolve("psp-private.pem", against: directory)
            let publicPath = PathResolution.resolve("psp-public.pem", against: directory)
            guard FileManager.default.fileExists(atPath: directory) else {
                throw UsageError("the --out folder \(directory) does not exist; create it first")
            }
            guard !FileManager.default.fileExists(atPath: privatePath) else {
                throw UsageError("\(privatePath) exists; keygen never overwrites a key")
            }
            // The private key is created 0600 from the start and never replaces a file (no moment where it is
            // readable by others, no silent overwrite).
            try SystemFile.writeAtomically(Array(try pair.privateKeyPEM().utf8), to: privatePath, replacing: false)
            try SystemFile.writeAtomically(
                Array(pair.publicKeyPEM.utf8),
                to: publicPath,
                permissions: 0o644,
                replacing: false
            )
            print("wrote \(privatePath) (keep it secret) and \(publicPath)")
            return .success
        case "token":
            let manifest = try CLI.loadManifest(args.configPath)
            let sandbox = try PaymentProcessorSandbox(manifest: manifest, privateKeyFile: args.value("key"))
            let lifetime = try args.integer("lifetime", default: 3600, in: 1...31_536_000)
            let audience = args.values("audience")
            let token = try sandbox.issueToken(
                merchantID: args.value("merchant") ?? defaultMerchant,
                audience: audience.isEmpty ? nil : audience,
                lifetime: .seconds(lifetime)
            )
            print(token.rawValue)
            return .success
        case "decrypt":
            let manifest = try CLI.loadManifest(args.configPath)
            let sandbox = try PaymentProcessorSandbox(manifest: manifest, privateKeyFile: args.value("key"))
            guard args.positionals.count <= 2 else { throw UsageError("psp decrypt takes one envelope") }
            let argument = args.positionals.count == 2 ? args.positionals[1] : "-"
            let input =
                argument == "-"
                ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : argument
            let contents = try sandbox.open(input.trimmingCharacters(in: .whitespacesAndNewlines))
            print(contents.contents.formatted(revealingPAN: args.flag("reveal")))
            return .success
        default:
            throw UsageError("unknown psp subcommand \"\(args.positionals[0])\" (expected keygen, token or decrypt)")
        }
    }
}
