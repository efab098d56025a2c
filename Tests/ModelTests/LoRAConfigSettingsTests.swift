import Adapters
import Model
import Testing

@Suite struct LoRAConfigSettingsTests {
    @Test func settingsRecordedByNameComeBackAsTheSameConfiguration() throws {
        let config = LoRAConfig(rank: 4, alpha: 8, dropout: 0.05, targets: [.q, .v, .down])
        #expect(config.settings == AdapterSettings(rank: 4, alpha: 8, dropout: 0.05, targets: ["q", "v", "down"]))
        #expect(try LoRAConfig(config.settings) == config)
    }

    @Test func aTargetThatIsNoProjectionIsRefusedByName() {
        #expect(throws: UnknownProjection(name: "attn_q")) {
            try LoRAConfig(AdapterSettings(rank: 1, alpha: 2, targets: ["q", "attn_q"]))
        }
    }
}
