import Testing
@testable import Training
