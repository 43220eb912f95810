import Foundation
import SimulatorCommand

// The simulator's name until 1.2: the same command for one release more, saying so once on stderr (stdout
// stays what scripts read, such as serve's LISTENING line).
FileHandle.standardError.write(Data("appstore-simulator is now store-simulator: this name goes in the next release\n".utf8))
await StoreSimulatorCommand.runFromCommandLine()
