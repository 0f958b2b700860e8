// The Swift side of btpack's interop tests (tests/swift/swift_interop.py):
// Swift's own runtime (the Runtime module) encodes, decodes, captures and
// crashes on request, and prints what it sees in a plain text form the test
// compares with btpack's. One program, compiled once per build.
//
//   probe decode-json     stdin: Backtrace JSON lines -> frames and images
//   probe encode-cbf      stdin: "ARCH BITS CIFHEX|- FRAMES..." -> JSON lines
//   probe cif             stdin: CIF hex lines -> images, Swift's re-encoding
//   probe capture         real backtraces (sync, without images, async)
//   probe imagemap PID    the image map of process PID as Swift captures it
//   probe crash KIND      crash: unwrap, index, fatal or null
//
// Text form: "arch A", one line per frame ("pc 0x..", "ra 0x..",
// "async 0x..", "omit N", "trunc"; runs of equal frames as "... xN"),
// "platform HEX N", "image NAMEHEX PATHHEX BUILDIDHEX BASE END" ("-" for
// none), "end". Strings are hex of their UTF-8 so nothing needs escaping.
@_spi(Internal) @_spi(MemoryReaders) import Runtime
import Foundation
#if canImport(Glibc)
import Glibc
#endif

func hex(_ b: [UInt8]) -> String {
  let d = Array("0123456789abcdef".utf8)
  var s = [UInt8](); s.reserveCapacity(b.count * 2)
  for x in b { s.append(d[Int(x >> 4)]); s.append(d[Int(x & 15)]) }
  return String(decoding: s, as: UTF8.self)
}
func unhex(_ s: Substring) -> [UInt8]? {
  let u = Array(s.utf8); if u.count % 2 != 0 { return nil }
  var out = [UInt8](); out.reserveCapacity(u.count / 2)
  func v(_ c: UInt8) -> UInt8? { switch c { case 48...57: return c - 48; case 97...102: return c - 87; case 65...70: return c - 55; default: return nil } }
  var i = 0
  while i < u.count { guard let a = v(u[i]), let b = v(u[i+1]) else { return nil }; out.append(a << 4 | b); i += 2 }
  return out
}
func addr(_ a: Backtrace.Address) -> String { "0x" + String(UInt64(a)!, radix: 16) }
func frameText(_ f: Backtrace.Frame) -> String {
  switch f {
  case .programCounter(let a): return "pc " + addr(a)
  case .returnAddress(let a): return "ra " + addr(a)
  case .asyncResumePoint(let a): return "async " + addr(a)
  case .omittedFrames(let n): return "omit \(n)"
  case .truncated: return "trunc"
  @unknown default: return "unknown"
  }
}
func printMap(_ m: ImageMap?) {
  guard let m = m else { print("images none"); return }
  print("platform " + hex(Array(m.platform.utf8)) + " \(m.count)")
  for i in m {
    let p = i.path.map { hex(Array($0.utf8)) } ?? "-"
    let n = i.name.map { hex(Array($0.utf8)) } ?? "-"
    let b = i.uniqueID.map { $0.isEmpty ? "=" : hex($0) } ?? "-"
    print("image \(n) \(p) \(b) \(addr(i.baseAddress)) \(addr(i.endOfText))")
  }
}
func printBacktrace(_ bt: Backtrace) {
  print("arch " + bt.architecture)
  var last = ""; var n = 0; var total = 0
  for f in bt.frames {
    let t = frameText(f)
    total += 1
    if t == last { n += 1 } else { if n > 0 { print(n > 1 ? "\(last) x\(n)" : last) }; last = t; n = 1 }
    if total >= 3_000_000 { print("LIMIT"); break }
  }
  if n > 0 { print(n > 1 ? "\(last) x\(n)" : last) }
  printMap(bt.images)
  print("end")
}
func rich<T: FixedWidthInteger>(_ words: [Substring], _ t: T.Type) -> [RichFrame<T>] {
  var out: [RichFrame<T>] = []
  var i = 0
  while i < words.count {
    let k = words[i]
    if k == "trunc" { out.append(.truncated); i += 1; continue }
    let v = words[i + 1]; i += 2
    switch k {
    case "pc": out.append(.programCounter(T(truncatingIfNeeded: UInt64(v, radix: 16)!)))
    case "ra": out.append(.returnAddress(T(truncatingIfNeeded: UInt64(v, radix: 16)!)))
    case "async": out.append(.asyncResumePoint(T(truncatingIfNeeded: UInt64(v, radix: 16)!)))
    case "omit": out.append(.omittedFrames(Int(v)!))
    default: fatalError("bad frame kind \(k)")
    }
  }
  return out
}

// ---- capture -----------------------------------------------------------

func emit(_ name: String, _ bt: Backtrace) {
  print("case " + name)
  print("json " + String(decoding: try! JSONEncoder().encode(bt), as: UTF8.self))
  printBacktrace(bt)
}
@inline(never) func captureLeaf(_ depth: Int) throws -> Backtrace {
  if depth > 0 { return try captureLeaf(depth - 1) }
  return try Backtrace.capture()
}
@inline(never) func asyncLeaf(_ depth: Int) async throws -> Backtrace {
  if depth > 0 {
    await Task.yield()
    return try await asyncLeaf(depth - 1)
  }
  return try Backtrace.capture(algorithm: .precise)
}
func capture() {
  let sync = try! captureLeaf(3)
  emit("sync", sync)
  var noImages = try! captureLeaf(5)
  noImages.images = nil
  emit("no-images", noImages)
  let deep = try! Backtrace.capture(limit: 8, top: 3)
  emit("limited", deep)
  let done = DispatchSemaphore(value: 0)
  Task {
    emit("async", try! await asyncLeaf(3))
    done.signal()
  }
  done.wait()
}

// ---- crashes ------------------------------------------------------------

@inline(never) func crashForceUnwrap(_ x: Int?) -> Int { return x! + 1 }
@inline(never) func crashIndex(_ a: [Int], _ i: Int) -> Int { return a[i] }
@inline(never) func crashFatal(_ s: String) -> Never { fatalError(s) }
@inline(never) func crashNullDeref(_ p: UnsafeMutablePointer<Int>) -> Int { return p.pointee }
@inline(never) func crashLevel2(_ kind: String) -> Int {
  let n = CommandLine.arguments.count  // 3: keeps the optimiser out
  switch kind {
  case "unwrap": return crashForceUnwrap(n > 5 ? n : nil)
  case "index": return crashIndex([1, 2, 3], n + 7)
  case "fatal": crashFatal("btpack test crash")
  default: return crashNullDeref(UnsafeMutablePointer<Int>(bitPattern: UInt(n - 3) + 1)! - 1)
  }
}
@inline(never) func crashLevel1(_ kind: String) -> Int { return crashLevel2(kind) + 1 }

// ---- main ---------------------------------------------------------------

let enc = JSONEncoder()
let args = CommandLine.arguments
let mode = args.count > 1 ? args[1] : ""
switch mode {
case "decode-json":
  // each line: a Backtrace JSON object -> its frames and images
  while let line = readLine() {
    do { printBacktrace(try JSONDecoder().decode(Backtrace.self, from: Data(line.utf8))) }
    catch { print("error \(error)"); print("end") }
  }
case "encode-cbf":
  // each line: ARCH BITS [CIFHEX|-] frames... -> JSON line of Swift's Backtrace
  while let line = readLine() {
    let w = line.split(separator: " ")
    let images: ImageMap? = w[2] == "-" ? nil : ImageMap(compactImageMapData: unhex(w[2])!)
    let fr = Array(w[3...])
    let bt: Backtrace
    switch w[1] {
    case "16": bt = Backtrace(architecture: String(w[0]), frames: rich(fr, UInt16.self), images: images)
    case "32": bt = Backtrace(architecture: String(w[0]), frames: rich(fr, UInt32.self), images: images)
    default: bt = Backtrace(architecture: String(w[0]), frames: rich(fr, UInt64.self), images: images)
    }
    print(String(decoding: try enc.encode(bt), as: UTF8.self))
  }
case "cif":
  // each line: CIF hex -> images and Swift's re-encoding
  while let line = readLine() {
    guard let b = unhex(Substring(line)), let m = ImageMap(compactImageMapData: b) else { print("nil"); print("end"); continue }
    printMap(m)
    fflush(stdout)
    print("reencoded " + hex(Array(CompactImageMapFormat.Encoder(m))))
    print("end")
  }
case "capture":
  capture()
case "imagemap":
  let pid = pid_t(args[2])!
  let m = ImageMap.capture(using: RemoteMemoryReader(pid: pid), forProcess: Int(pid))
  printMap(m)
  print("cif " + hex(Array(CompactImageMapFormat.Encoder(m))))
  print("end")
case "crash":
  print(crashLevel1(args[2]))
default:
  fatalError("usage: probe decode-json|encode-cbf|cif|capture|imagemap PID|crash KIND")
}
