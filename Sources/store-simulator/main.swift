import SimulatorCommand

await StoreSimulatorCommand.runFromCommandLine()
