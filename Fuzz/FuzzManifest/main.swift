@_cdecl("LLVMFuzzerTestOneInput") public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt { 0 }
