import Foundation

/// One option of a command, declared once: the parser reads it, `--help` prints it, usage lines show it.
struct Option: Sendable {
    /// The name without dashes (`lanes` for `--lanes`).
    var name: String
    /// The value's placeholder in help (`N`, `FILE`); `nil` for a flag, which takes no value.
    var placeholder: String?
    var help: String
    /// The value an absent option has, printed as "(default: …)"; ``Arguments/string(_:)`` and
    /// ``Arguments/integer(_:in:)`` return it when the option is not given.
    var defaultValue: String?
    /// What an absent option means when that is not one value ("$PSP_TOKEN, else a sandbox token"): help only.
    var defaultDescription: String?
    /// Whether the option may be given more than once (every value is kept, in order).
    var repeatable = false
    /// Whether the command refuses to run without it.
    var required = false

    /// An option that takes no value.
    static func flag(_ name: String, help: String) -> Option {
        Option(name: name, placeholder: nil, help: help)
    }

    /// An option that takes a value (`--name VALUE` or `--name=VALUE`).
    static func value(
        _ name: String,
        _ placeholder: String,
        help: String,
        default defaultValue: String? = nil,
        defaultDescription: String? = nil,
        repeatable: Bool = false,
        required: Bool = false
    ) -> Option {
        Option(
            name: name,
            placeholder: placeholder,
            help: help,
            defaultValue: defaultValue,
            defaultDescription: defaultDescription,
            repeatable: repeatable,
            required: required
        )
    }

    var takesValue: Bool { placeholder != nil }

    /// The default as help prints it.
    var defaultText: String? { defaultDescription ?? defaultValue }

    /// `--name VALUE`, `--name VALUE...` or `--name`.
    var synopsis: String {
        guard let placeholder else { return "--\(name)" }
        return "--\(name) \(placeholder)" + (repeatable ? "..." : "")
    }
}

/// A positional argument of a command (`FILE` of `config check [FILE]`).
struct Positional: Sendable {
    var placeholder: String
    var help: String
    var optional = true
}

/// A command or subcommand, declared once: its options, positionals, subcommands, help and action.
///
/// A command has either subcommands (a group such as `psp`) or an action (a leaf such as `psp token`). The
/// options every command takes (``CommandTable/commonOptions``) are added by the parser and the help, not
/// declared per command.
struct Command: Sendable {
    typealias Action = @Sendable (Arguments) async throws -> ExitCode

    var name: String
    /// One line for the parent's list of commands.
    var summary: String
    /// What the command does, printed after the usage line (pre-wrapped paragraphs).
    var details: String = ""
    var options: [Option] = []
    var positionals: [Positional] = []
    var subcommands: [Command] = []
    /// Printed after the options (pre-wrapped paragraphs).
    var notes: String = ""
    /// Whether the command reads the manifest `--config` names (the others accept `--config` and ignore it, so
    /// that one command line works for every command).
    var readsManifest = true
    var action: Action? = nil

    func subcommand(named name: String) -> Command? { subcommands.first { $0.name == name } }
}

/// A command and the names that lead to it (`["proxima", "psp", "token"]`).
struct CommandPath: Sendable {
    var command: Command
    var names: [String]

    /// `proxima psp token`.
    var invocation: String { names.joined(separator: " ") }

    func appending(_ child: Command) -> CommandPath {
        CommandPath(command: child, names: names + [child.name])
    }
}

/// A usage error: printed with the command's usage line and a help hint, exit code 2.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A parse failure: what was wrong, and the command whose usage line the message shows.
struct ParseFailure: Error {
    var message: String
    var at: CommandPath
}

/// Parsed command-line words of one command: its options (`--name value`, `--name=value`, flags) and positionals.
struct Arguments: Sendable {
    let path: CommandPath
    private(set) var positionals: [String] = []
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []

    init(path: CommandPath) { self.path = path }

    /// The value given for an option, or `nil` when it was not given (its default is not applied).
    func value(_ name: String) -> String? { values[name]?.last }
    /// Every value of an option that may be given more than once.
    func values(_ name: String) -> [String] { values[name] ?? [] }
    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The value given, else the option's declared default.
    func string(_ name: String) -> String? { value(name) ?? option(name)?.defaultValue }

    /// The value given (else the declared default) as an integer in `range`.
    /// - Throws: ``UsageError`` naming the option when the text is not an integer in `range`.
    func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int {
        guard let text = string(name) else {
            throw UsageError("--\(name) needs a value (an integer in \(range.lowerBound)…\(range.upperBound))")
        }
        guard let n = Int(text), range.contains(n) else {
            throw UsageError("--\(name) must be an integer in \(range.lowerBound)…\(range.upperBound), got \"\(text)\"")
        }
        return n
    }

    /// `--config FILE`, else `$PROXIMA_CONFIG`, else `Config/proxima.json`.
    var configPath: String {
        value("config") ?? ProcessInfo.processInfo.environment["PROXIMA_CONFIG"] ?? "Config/proxima.json"
    }

    private func option(_ name: String) -> Option? {
        (path.command.options + CommandTable.commonOptions).first { $0.name == name }
    }

    fileprivate mutating func record(_ option: Option, _ value: String?) {
        if let value { values[option.name, default: []].append(value) } else { flags.insert(option.name) }
    }

    fileprivate mutating func appendPositional(_ word: String) { positionals.append(word) }

    fileprivate func given(_ option: Option) -> Bool { values[option.name] != nil || flags.contains(option.name) }
}

/// What a command line asks for.
enum Invocation {
    /// Run a command's action with its parsed arguments.
    case run(Command.Action, Arguments)
    /// Print a command's help (`-h`, `--help`, `proxima help …`).
    case help(CommandPath)
    /// A group named without a subcommand (`proxima`, `proxima psp`): print its help as a usage error.
    case incomplete(CommandPath)
}

/// The parser and help printer driven by a table of ``Command``s.
struct CommandTable: Sendable {
    let root: Command

    /// Options every command takes, declared once. `-h`/`--help` is handled by the parser itself.
    static let commonOptions: [Option] = [
        .value(
            "config",
            "FILE",
            help: "The manifest.",
            defaultDescription: "$PROXIMA_CONFIG, then Config/proxima.json"
        )
    ]

    /// Width help text is wrapped to.
    static let width = 116

    /// Reads `words` (the arguments after the program name) left to right.
    ///
    /// Words name subcommands until a command with an action is reached; options belong to the command named
    /// so far (plus ``commonOptions``, which every level takes); `-h` or `--help` asks for the help of the command
    /// named so far; `--` ends the options.
    /// - Throws: ``ParseFailure`` naming the unknown command or option, a missing or unexpected value, a
    ///   repeated option, a missing required option, or too many positionals.
    func parse(_ words: [String]) throws(ParseFailure) -> Invocation {
        var path = CommandPath(command: root, names: [root.name])
        var arguments = Arguments(path: path)
        var optionsEnded = false
        var index = 0
        func fail(_ message: String) -> ParseFailure { ParseFailure(message: message, at: path) }

        while index < words.count {
            let word = words[index]
            index += 1
            if !optionsEnded, word == "--" {
                optionsEnded = true
            } else if !optionsEnded, word == "-h" || word == "--help" {
                return .help(path)
            } else if !optionsEnded, word.hasPrefix("--") {
                var name = String(word.dropFirst(2))
                var value: String? = nil
                if let equals = name.firstIndex(of: "=") {
                    value = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
                guard let option = (path.command.options + Self.commonOptions).first(where: { $0.name == name }) else {
                    throw fail(
                        "unknown option --\(name) for '\(path.invocation)'" + Self.hint(forOption: name, at: path)
                    )
                }
                if option.takesValue {
                    if value == nil {
                        guard index < words.count else { throw fail("option \(option.synopsis) needs a value") }
                        value = words[index]
                        index += 1
                    }
                } else if value != nil {
                    throw fail("option --\(name) takes no value")
                }
                if arguments.given(option) && !option.repeatable {
                    throw fail("option --\(name) is given more than once")
                }
                arguments.record(option, value)
            } else if !optionsEnded, word.hasPrefix("-"), word != "-" {
                throw fail("unknown option \(word) for '\(path.invocation)' (options are --name; -h is help)")
            } else if !path.command.subcommands.isEmpty {
                guard let child = path.command.subcommand(named: word) else {
                    throw fail(Self.unknown(word, below: path))
                }
                // Options given so far are the common ones: they carry down to the subcommand.
                path = path.appending(child)
                arguments = arguments.moved(to: path)
            } else {
                guard arguments.positionals.count < path.command.positionals.count else {
                    let accepted = path.command.positionals.map(\.placeholder)
                    let takes =
                        switch accepted.count {
                        case 0: "takes no arguments"
                        case 1: "takes one argument (\(accepted[0]))"
                        default: "takes at most \(accepted.count) arguments (\(accepted.joined(separator: " ")))"
                        }
                    throw fail("'\(path.invocation)' \(takes), found \"\(word)\"")
                }
                arguments.appendPositional(word)
            }
        }
        guard let action = path.command.action else { return .incomplete(path) }
        for option in path.command.options where option.required && !arguments.given(option) {
            throw fail("'\(path.invocation)' needs \(option.synopsis)")
        }
        let needed = path.command.positionals.filter { !$0.optional }.count
        if arguments.positionals.count < needed {
            let missing = path.command.positionals[arguments.positionals.count].placeholder
            throw fail("'\(path.invocation)' needs \(missing)")
        }
        return .run(action, arguments)
    }

    /// The command at `names` below the root (`["psp", "token"]`).
    func path(to names: [String]) throws(ParseFailure) -> CommandPath {
        var path = CommandPath(command: root, names: [root.name])
        for name in names {
            guard let child = path.command.subcommand(named: name) else {
                throw ParseFailure(message: Self.unknown(name, below: path), at: path)
            }
            path = path.appending(child)
        }
        return path
    }

    /// `unknown subcommand "x" for 'proxima psp' (expected: keygen, token or decrypt)`.
    private static func unknown(_ name: String, below path: CommandPath) -> String {
        let what = path.names.count == 1 ? "command" : "subcommand"
        let expected = path.command.subcommands.map(\.name)
        return "unknown \(what) \"\(name)\" for '\(path.invocation)' (expected: \(list(expected)))"
    }

    // MARK: Help

    /// The usage lines of a command, as words: one line for a leaf, one per leaf below a group. The first word
    /// of a line is the invocation (`proxima psp token`).
    func usageLines(_ path: CommandPath) -> [[String]] {
        if path.command.subcommands.isEmpty { return [usageLine(path)] }
        if path.names.count == 1 { return [[path.invocation, "<command>", "[options]"]] }
        return path.command.subcommands.flatMap { usageLines(path.appending($0)) }
    }

    /// `proxima cardsim`, `--vpcd HOST:PORT`, `--card FILE`, `[--taps N]`, …, `[--config FILE]`.
    private func usageLine(_ path: CommandPath) -> [String] {
        let options = path.command.options + Self.commonOptions
        var parts = [path.invocation]
        parts += options.filter(\.required).map(\.synopsis)
        parts += options.filter { !$0.required }.map { "[\($0.synopsis)]" }
        parts += path.command.positionals.map { $0.optional ? "[\($0.placeholder)]" : $0.placeholder }
        return parts
    }

    /// `USAGE: …`, one line per usage, long ones wrapped and indented under the first option.
    func usageBlock(_ path: CommandPath) -> String {
        usageLines(path).enumerated().map { index, words in
            let lead = index == 0 ? "USAGE: " : "       "
            let hang = String(repeating: " ", count: lead.count + (words.first?.count ?? 0) + 1)
            return lead + Self.wrap(words, width: Self.width, indent: lead.count, hang: hang)
        }.joined(separator: "\n")
    }

    /// The full help of a command, generated from the table.
    func help(_ path: CommandPath) -> String {
        let command = path.command
        var sections: [String] = []
        if path.names.count == 1 {
            sections.append("\(path.invocation) — \(command.summary)")
        }
        sections.append(usageBlock(path))
        if !command.details.isEmpty { sections.append(command.details) }
        if !command.subcommands.isEmpty {
            let heading = path.names.count == 1 ? "COMMANDS:" : "SUBCOMMANDS:"
            let rows = command.subcommands.map { child -> (String, String) in
                let names = child.subcommands.map(\.name)
                let label = names.isEmpty ? child.name : "\(child.name) \(names.joined(separator: "|"))"
                return (label, child.summary)
            }
            sections.append(heading + "\n" + Self.columns(rows))
            if path.names.count == 1 {
                let common = Self.commonOptions.map { option in
                    option.synopsis + (option.defaultText.map { " (default: \($0))" } ?? "")
                }
                let sentence = "Every command takes \(common.joined(separator: ", ")) and -h/--help."
                sections.append(
                    Self.wrap(sentence.split(separator: " ").map(String.init), width: Self.width, indent: 0, hang: "")
                )
                sections.append(
                    "EXIT CODES:\n"
                        + ExitCode.allCases.map { "  \($0.rawValue)  \($0.meaning)" }.joined(separator: "\n")
                )
            }
            let child = path.names.count == 1 ? "<command>" : "<subcommand>"
            sections.append("Run '\(path.invocation) \(child) --help' for its options.")
        } else {
            if !command.positionals.isEmpty {
                sections.append(
                    "ARGUMENTS:\n" + Self.columns(command.positionals.map { ($0.placeholder, $0.help) })
                )
            }
            var rows = command.options.map { ($0.synopsis, Self.describe($0)) }
            rows += Self.commonOptions.map { option in
                let unused = command.readsManifest ? "" : " This command reads no manifest: it accepts and ignores it."
                return (option.synopsis, Self.describe(option) + unused)
            }
            rows.append(("-h, --help", "Show this help."))
            sections.append("OPTIONS:\n" + Self.columns(rows))
        }
        if !command.notes.isEmpty { sections.append(command.notes) }
        return sections.joined(separator: "\n\n")
    }

    /// An option's help with its default, whether it is required and whether it repeats.
    private static func describe(_ option: Option) -> String {
        var text = option.help
        if let defaultText = option.defaultText {
            if text.hasSuffix(".") { text.removeLast() }
            text += " (default: \(defaultText))."
        }
        if option.required { text += " Required." }
        if option.repeatable { text += " May be given more than once." }
        return text
    }

    /// Two columns: labels indented by two, texts aligned and wrapped under each other.
    private static func columns(_ rows: [(String, String)]) -> String {
        let labelWidth = min(24, rows.map(\.0.count).max() ?? 0)
        let hang = String(repeating: " ", count: 2 + labelWidth + 2)
        return rows.map { label, text in
            let words = text.split(separator: " ").map(String.init)
            if label.count > labelWidth {
                return "  \(label)\n\(hang)" + wrap(words, width: width, indent: hang.count, hang: hang)
            }
            let body = wrap(words, width: width, indent: hang.count, hang: hang)
            return "  " + label.padding(toLength: labelWidth, withPad: " ", startingAt: 0) + "  " + body
        }.joined(separator: "\n")
    }

    /// `words` joined by spaces into lines of at most `width` columns: the first line starts at column `indent`,
    /// the others with `hang`.
    private static func wrap(_ words: [String], width: Int, indent: Int, hang: String) -> String {
        var lines: [String] = []
        var line = ""
        for word in words {
            let room = width - (lines.isEmpty ? indent : hang.count)
            if line.isEmpty {
                line = word
            } else if line.count + 1 + word.count <= room {
                line += " " + word
            } else {
                lines.append(line)
                line = word
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines.joined(separator: "\n" + hang)
    }

    /// What the user probably meant by an unknown option: one of the command's options a typo away, or the
    /// subcommand that declares it (`proxima psp --out DIR keygen` → `--out` belongs after `keygen`).
    private static func hint(forOption name: String, at path: CommandPath) -> String {
        let known = (path.command.options + commonOptions).map(\.name)
        if let close = known.first(where: { editDistance($0, name, limit: 2) <= 2 }) {
            return "; did you mean --\(close)?"
        }
        let owners = path.command.subcommands.filter { $0.options.contains { $0.name == name } }.map(\.name)
        if !owners.isEmpty {
            return "; it is an option of '\(path.invocation) \(list(owners))': give it after the subcommand"
        }
        return ""
    }

    /// The Levenshtein distance of two short words, or `limit + 1` once it is known to be larger than `limit`.
    static func editDistance(_ a: String, _ b: String, limit: Int) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard abs(a.count - b.count) <= limit else { return limit + 1 }
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// `a, b or c`.
    static func list(_ names: [String]) -> String {
        guard let last = names.last else { return "" }
        return names.count == 1 ? last : names.dropLast().joined(separator: ", ") + " or " + last
    }
}

extension Arguments {
    /// The same options and positionals, now belonging to `path` (a subcommand named after them).
    fileprivate func moved(to path: CommandPath) -> Arguments {
        var moved = Arguments(path: path)
        moved.positionals = positionals
        moved.values = values
        moved.flags = flags
        return moved
    }
}
