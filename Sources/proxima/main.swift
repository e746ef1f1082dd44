import Dispatch
import Foundation

// The CLI's body runs in a task so that Ctrl-C (SIGINT) and SIGTERM cancel it: commands then stop their
// kernel cleanly (transports stop in reverse order, waiting taps end with `shuttingDown`).
signal(SIGINT, SIG_IGN)
signal(SIGTERM, SIG_IGN)
let main = Task { await CLI.run(Array(CommandLine.arguments.dropFirst())) }
let signalSources = [SIGINT, SIGTERM].map { sig in
    let source = DispatchSource.makeSignalSource(signal: sig, queue: .main)
    source.setEventHandler { main.cancel() }
    source.resume()
    return source
}
Task {
    let code = await main.value
    exit(code.rawValue)
}
dispatchMain()
